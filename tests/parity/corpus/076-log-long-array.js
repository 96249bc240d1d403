// console.log of large arrays: numeric column grouping and the "... more items" cutoff
console.log(Array.from({ length: 10 }, (_, i) => i));
console.log(Array.from({ length: 30 }, (_, i) => i * 7));
console.log(Array.from({ length: 101 }, (_, i) => i));
console.log(Array.from({ length: 150 }, (_, i) => i % 3 === 0 ? 'fizz' : i));
console.log(Array.from({ length: 26 }, (_, i) => (i - 13) * 1000.5));
console.log(new Array(5));
console.log(new Array(200).fill(0).length);
