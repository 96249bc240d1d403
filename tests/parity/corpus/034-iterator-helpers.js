// ES2025 Iterator helpers: map/filter/take/drop/flatMap/reduce/toArray/Iterator.from
function* count() { let i = 0; while (true) yield i++; }
console.log(count().filter(n => n % 3 === 0).map(n => n * 10).take(5).toArray());
console.log(count().drop(5).take(3).toArray());
console.log([1, 2, 3].values().flatMap(n => [n, -n]).toArray());
console.log(count().take(5).reduce((a, b) => a + b), count().take(4).some(x => x === 3), count().take(4).every(x => x < 3));
console.log(count().find(n => n * n > 50));
const seen = [];
count().take(3).forEach(x => seen.push(x));
console.log(seen);
const fromObj = Iterator.from({ i: 0, next() { return this.i < 3 ? { value: this.i++, done: false } : { done: true }; } });
console.log(fromObj.map(x => `#${x}`).toArray());
console.log(new Set(['a', 'b']).values().map(s => s.toUpperCase()).toArray());
console.log(typeof Iterator, Object.getPrototypeOf(count()) !== Iterator.prototype);
