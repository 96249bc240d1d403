// Spread and rest in calls, arrays and object literals
function sum(...nums) { return nums.reduce((a, b) => a + b, 0); }
console.log(sum(), sum(1), sum(1, 2, 3, 4));
const base = [1, 2, 3];
const more = [0, ...base, 4, ...'hi'];
console.log(more);
const defaults = { color: 'red', size: 'M', qty: 1 };
const order = { ...defaults, size: 'L', note: undefined };
console.log(order);
console.log(Object.keys(order).length, 'note' in order);
const merged = { ...null, ...undefined, ...'ab', ...[9] };
console.log(merged);
console.log(Math.max(...new Set([5, 1, 9, 3])));
const copy = [...base];
copy.push(99);
console.log(base, copy);
