// A small observable store built on EventTarget + CustomEvent with unsubscribe
class Store extends EventTarget {
  #state;
  constructor(initial) { super(); this.#state = initial; }
  get state() { return this.#state; }
  dispatch(action) {
    const prev = this.#state;
    if (action.type === 'add') this.#state = { ...prev, items: [...prev.items, action.item] };
    else if (action.type === 'clear') this.#state = { ...prev, items: [] };
    else return;
    this.dispatchEvent(new CustomEvent('change', { detail: { action: action.type, prevCount: prev.items.length } }));
  }
  subscribe(fn) { const h = e => fn(this.#state, e.detail); this.addEventListener('change', h); return () => this.removeEventListener('change', h); }
}
const store = new Store({ items: [] });
const unsubA = store.subscribe((s, d) => console.log('A sees', s.items, d));
store.subscribe(s => console.log('B count', s.items.length));
store.dispatch({ type: 'add', item: 'milk' });
store.dispatch({ type: 'add', item: 'eggs' });
unsubA();
store.dispatch({ type: 'unknown' });
store.dispatch({ type: 'clear' });
console.log(store.state, store instanceof EventTarget);
