// Event objects: type, cancelable, preventDefault, defaultPrevented, stopImmediatePropagation
const t = new EventTarget();
t.addEventListener('save', (e) => { console.log('first', e.type, e.cancelable, e.bubbles); e.preventDefault(); });
t.addEventListener('save', (e) => { console.log('second', e.defaultPrevented); e.stopImmediatePropagation(); });
t.addEventListener('save', () => console.log('third (never)'));
const ev = new Event('save', { cancelable: true });
const notCancelled = t.dispatchEvent(ev);
console.log('dispatch returned', notCancelled, 'defaultPrevented', ev.defaultPrevented);
const ev2 = new Event('x');
ev2.preventDefault();
console.log(ev2.defaultPrevented, ev2.eventPhase, typeof ev2.timeStamp);
const ce = new CustomEvent('c', { detail: [1, 2] });
console.log(ce.type, ce.detail, ce.isTrusted);
try { t.dispatchEvent('not an event'); } catch (e) { console.log(e.name); }
