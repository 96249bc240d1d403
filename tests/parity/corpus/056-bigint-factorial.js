// BigInt number theory: factorial, modular exponentiation, gcd, digit sums
const fact = n => { let r = 1n; for (let i = 2n; i <= n; i++) r *= i; return r; };
const f50 = fact(50n);
console.log('50! =', f50.toString());
console.log('digits:', f50.toString().length, 'digit sum:', [...f50.toString()].reduce((s, d) => s + Number(d), 0));
function modpow(b, e, m) { let r = 1n; b %= m; while (e > 0n) { if (e & 1n) r = (r * b) % m; b = (b * b) % m; e >>= 1n; } return r; }
console.log(modpow(2n, 1000n, 1000000007n), modpow(3n, 10n ** 18n, 998244353n));
const gcd = (x, y) => (y === 0n ? x : gcd(y, x % y));
console.log(gcd(fact(20n), 2n ** 40n * 3n ** 5n));
let fa = 0n, fb = 1n;
for (let i = 0; i < 200; i++) [fa, fb] = [fb, fa + fb];
console.log('fib(200) =', fa);
