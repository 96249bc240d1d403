// console.log of objects with many keys and the property cutoff behaviour
const obj = {};
for (let i = 0; i < 30; i++) obj['key' + i] = i;
console.log(obj);
const wide = Object.fromEntries('abcdefghijklmnopqrstuvwxyz'.split('').map((c, i) => [c, i]));
console.log(wide);
const arrOfKeys = Object.keys(wide);
console.log(arrOfKeys.length, arrOfKeys.slice(-3));
