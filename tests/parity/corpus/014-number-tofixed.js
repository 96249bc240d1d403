// Number formatting: toFixed, toPrecision, toExponential, toString(radix), rounding edge cases
const vals = [0, 1, -1.5, 1.005, 2.5, 123.456, 0.000123, 1e21, 99.995, -0.0001];
for (const v of vals) {
  console.log(String(v).padStart(8), v.toFixed(2).padStart(10), v.toPrecision(3).padStart(10), v.toExponential(2));
}
console.log((255).toString(16), (255).toString(2), (-255).toString(36), (0.5).toString(2));
console.log(Number('0x1f'), Number(' 12 '), Number('12px'), parseInt('12px'), parseFloat('3.14abc'));
console.log(Number.MAX_SAFE_INTEGER, Number.EPSILON > 0, Number.isInteger(5.0), Number.isSafeInteger(2 ** 53));
console.log(0.1 + 0.2, (0.1 + 0.2).toFixed(10), 1 / 3, 2 ** -1074, 1.7976931348623157e308 * 10);
console.log(Math.round(-0.5), Math.round(2.5), Math.trunc(-4.7), Math.sign(-3), Math.cbrt(27), Math.hypot(3, 4));
