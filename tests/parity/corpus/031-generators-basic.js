// Generator functions: lazy sequences, take(), yield*, infinite generators
function* naturals(start = 1) { let n = start; while (true) yield n++; }
function* take(it, n) { if (n <= 0) return; for (const x of it) { yield x; if (--n <= 0) return; } }
function* filter(it, pred) { for (const x of it) if (pred(x)) yield x; }
function* map(it, f) { for (const x of it) yield f(x); }
const isPrime = n => { if (n < 2) return false; for (let d = 2; d * d <= n; d++) if (n % d === 0) return false; return true; };
console.log([...take(filter(naturals(), isPrime), 15)].join(' '));
console.log([...take(map(naturals(), n => n * n), 8)]);
function* inner() { yield 'a'; yield 'b'; return 'inner-done'; }
function* outer() { const r = yield* inner(); yield r; yield* [1, 2]; yield* 'xy'; }
console.log([...outer()]);
const g = naturals(10);
console.log(g.next(), g.next().value, typeof g[Symbol.iterator], g[Symbol.iterator]() === g);
