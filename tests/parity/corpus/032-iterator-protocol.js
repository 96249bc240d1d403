// Hand-written iterator protocol objects, return() on early exit, spread/destructure
class Range {
  constructor(from, to, step = 1) { Object.assign(this, { from, to, step }); }
  [Symbol.iterator]() {
    let cur = this.from; const { to, step } = this;
    return {
      next: () => (cur <= to ? { value: (cur += step) - step, done: false } : { value: undefined, done: true }),
      return: () => { console.log('  return() called at', cur); return { done: true }; },
      [Symbol.iterator]() { return this; },
    };
  }
}
console.log([...new Range(1, 5)]);
console.log(Array.from(new Range(0, 20, 5)));
for (const x of new Range(1, 100)) { if (x > 3) break; console.log('loop', x); }
const [a, b] = new Range(10, 20);
console.log(a, b);
const it = [10, 20, 30][Symbol.iterator]();
console.log(it.next(), it.next(), it.next(), it.next());
const entries = new Map([['k1', 'v1'], ['k2', 'v2']]).entries();
console.log(entries.next().value, [...entries]);
