// console.log of very long strings: top-level is printed fully, nested strings split across lines
const long = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(4).trim();
console.log(long);
console.log({ text: long });
console.log([long]);
console.log({ tenk: 'x'.repeat(10005) }.tenk.length);
const huge = 'y'.repeat(10010);
const printed = [huge];
console.log(printed[0].length);
