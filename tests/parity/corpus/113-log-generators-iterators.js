// console.log of generator objects, array/map/set iterators and entries views
function* gen() { yield 1; }
console.log(gen());
console.log([1, 2, 3][Symbol.iterator]());
console.log([1, 2, 3].entries());
const m = new Map([['a', 1], ['b', 2]]);
console.log(m.keys(), m.values());
console.log(m.entries());
console.log(new Set(['x', 'y']).values());
const it = m.entries(); it.next();
console.log(it);
console.log('abc'[Symbol.iterator]());
console.log(Object.prototype.toString.call(gen()), Object.prototype.toString.call(m.keys()));
