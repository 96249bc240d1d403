// console.log of sparse arrays and holes vs explicit undefined
console.log([1, , 3]);
console.log([, , ,]);
console.log([undefined, undefined]);
const a = [];
a[5] = 'five';
console.log(a, a.length);
const b = [1, 2, 3];
b[10] = 11;
console.log(b);
const c = new Array(3);
c[1] = 'middle';
console.log(c, Object.keys(c));
delete b[0];
console.log(b);
console.log([1, , 3].map(x => x * 2), [1, , 3].flat());
