// Logical assignment operators ||=, &&=, ??= and numeric separators
const opts = { retries: 0, name: '', timeout: null, verbose: true };
opts.retries ||= 3;
opts.name ||= 'default';
opts.timeout ??= 5000;
opts.verbose &&= 'yes';
opts.missing ??= 'filled';
opts.retries ??= 99;
console.log(opts);
let calls = 0;
const side = () => (++calls, 'computed');
let a = 'set';
a ||= side(); a ??= side();
let b = null;
b &&= side();
console.log(a, b, 'calls:', calls);
const big = 1_000_000_000, hex = 0xFF_FF, frac = 0.000_001, bin = 0b1010_1010;
console.log(big, hex, frac, bin, 1_0n ** 2_0n);
console.log(2 ** 10, (-2) ** 3, 2 ** 3 ** 2, 7 % -3, -7 % 3);
