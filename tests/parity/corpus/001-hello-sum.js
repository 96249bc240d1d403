// Basic arithmetic, loops and string concatenation
const nums = [3, 14, 15, 92, 65, 35];
let total = 0;
for (const n of nums) total += n;
console.log('Hello, parity!');
console.log('sum = ' + total);
console.log('avg = ' + total / nums.length);
console.log('max =', Math.max(...nums), 'min =', Math.min(...nums));
