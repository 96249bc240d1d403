// console.log of -0, NaN, Infinity, tiny/huge numbers, top-level and nested
console.log(-0, 0, +0, -0 + 0, 0 * -1);
console.log([-0, 0, NaN, Infinity, -Infinity]);
console.log({ negZero: -0, nan: NaN, inf: Infinity });
console.log(String(-0), `${-0}`, JSON.stringify(-0), (-0).toFixed(1), Object.is(-0, 0));
console.log(1e21, 1e-7, 123456789012345680000, 0.000001, 2 ** 53, -(2 ** 31));
console.log([1e21, 1e-7, 5e-324, 1.7976931348623157e308]);
console.log(0.1 * 3, 100 / 3, -1 / 3, 1 / 0, -1 / 0, 0 / 0);
console.log(Number.MIN_VALUE, Number.MAX_VALUE, Number.MIN_SAFE_INTEGER);
console.log(new Float64Array([-0, NaN, 1.5]));
