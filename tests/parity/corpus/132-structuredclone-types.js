// structuredClone of Map, Set, Date, RegExp, typed arrays, errors; class instances lose prototype
const src = {
  map: new Map([['k', { v: 1 }]]),
  set: new Set([1, 'two']),
  date: new Date(Date.UTC(2021, 5, 1)),
  re: /ab+c/gi,
  bytes: new Uint8Array([1, 2, 3]),
  err: new RangeError('cloned error'),
};
const c = structuredClone(src);
console.log(c.map, c.set, c.date.toISOString(), c.re, c.bytes);
console.log(c.map !== src.map, c.date instanceof Date, c.re.lastIndex, c.re.flags);
console.log(c.err instanceof RangeError, c.err.name, c.err.message);
class Point { constructor() { this.x = 1; } get len() { return 1; } }
const p = structuredClone(new Point());
console.log(p, p instanceof Point, p.constructor === Object);
const buf = new Uint8Array([9, 9]).buffer;
const moved = structuredClone(buf, { transfer: [buf] });
console.log(buf.byteLength, moved.byteLength);
