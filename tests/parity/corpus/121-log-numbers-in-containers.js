// console.log alignment of numeric arrays with mixed widths, negatives and decimals
console.log([1, 22, 333, 4444, 55555, 666666, 7, 88, 999]);
console.log([-1, 2, -3, 4, -5, 6, -7, 8, -9, 10, -11]);
console.log([0.5, 1.25, 10.125, 100, 1000.0625, 3, 4, 5]);
console.log([1, 2, 3, 4, 5, 6, 'seven', 8, 9]);
console.log(Array.from({ length: 16 }, (_, i) => 2 ** i));
console.log(Array.from({ length: 7 }, (_, i) => i));
console.log(Array.from({ length: 8 }, (_, i) => i));
