// Closures: counters, once(), memoize, and loop-variable capture
function makeCounter(start = 0) {
  let n = start;
  return { inc: () => ++n, dec: () => --n, get value() { return n; } };
}
const c = makeCounter(10);
c.inc(); c.inc(); c.dec();
console.log('counter', c.value);
function once(fn) { let done = false, r; return (...a) => done ? r : (done = true, r = fn(...a)); }
const init = once(x => { console.log('init called with', x); return x * 2; });
console.log(init(21), init(99));
const fns = [];
for (let i = 0; i < 3; i++) fns.push(() => i);
var vfns = [];
for (var j = 0; j < 3; j++) vfns.push(() => j);
console.log(fns.map(f => f()), vfns.map(f => f()));
const adder = a => b => c2 => a + b + c2;
console.log(adder(1)(2)(3));
