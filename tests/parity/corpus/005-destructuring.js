// Object and array destructuring with defaults, renames, rest, nested
const config = { host: 'localhost', port: 8080, tls: { enabled: false }, tags: ['a', 'b', 'c'] };
const { host, port: p = 80, timeout = 30, tls: { enabled }, tags: [first, ...others] } = config;
console.log(host, p, timeout, enabled, first, others);
const [a, , c = 'default-c', ...rest] = [1, 2, undefined, 4, 5];
console.log(a, c, rest);
let x = 1, y = 2;
[x, y] = [y, x];
console.log('swapped', x, y);
function area({ w = 1, h = 1 } = {}) { return w * h; }
console.log(area(), area({ w: 3 }), area({ w: 3, h: 4 }));
const { a: aa, ...remaining } = { a: 1, b: 2, c: 3 };
console.log(aa, remaining);
for (const [k, v] of Object.entries({ one: 1, two: 2 })) console.log(k, '->', v);
