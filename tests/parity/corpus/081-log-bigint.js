// console.log of BigInt values top-level, nested, in Maps and typed arrays
console.log(1n, -42n, 0n, 2n ** 70n);
console.log([1n, 2n, 3n]);
console.log({ id: 9007199254740993n, neg: -1n });
console.log(new Map([[1n, 'one big']]), new Set([10n]));
console.log(new BigInt64Array([1n, -1n, 2n ** 62n]), new BigUint64Array([2n ** 64n - 1n]));
console.log(typeof 1n, String(10n), `${10n}`, 10n.toString(2));
console.log(Object(5n));
