// BigInt arithmetic: big powers, division truncation, mixing errors, asIntN/asUintN
const a = 2n ** 100n;
console.log(a.toString(), a.toString(16), a.toString(36));
console.log(7n / 2n, -7n / 2n, 7n % -2n, -7n % 2n, (-2n) ** 3n);
console.log(BigInt('0x1fffffffffffff') + 1n === BigInt(Number.MAX_SAFE_INTEGER) + 2n);
console.log(BigInt.asIntN(8, 255n), BigInt.asUintN(8, -1n), BigInt.asUintN(64, -1n));
console.log(1n < 2, 2n == 2, 2n === 2, typeof 1n, 0n ? 'truthy' : 'falsy');
try { 1n + 1; } catch (e) { console.log(e.name, e.message); }
try { BigInt('1.5'); } catch (e) { console.log(e.name); }
try { 1n / 0n; } catch (e) { console.log(e.name, e.message); }
console.log(Number(2n ** 64n), parseInt('123n'), BigInt(Number.MAX_SAFE_INTEGER) * 3n);
console.log(5n << 10n, -1n >> 3n, 0b1010n & 0b0110n, ~5n);
