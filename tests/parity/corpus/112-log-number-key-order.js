// Property enumeration order: integer keys ascending first, then strings in insertion order
const o = { b: 1, 10: 'ten', a: 2, 2: 'two', '01': 'zero-one', 1: 'one', [-1]: 'minus', 4294967295: 'big' };
console.log(o);
console.log(Object.keys(o).join(','));
console.log(JSON.stringify(o));
const arr = ['x', 'y'];
arr.extra = 'prop';
arr[-1] = 'neg';
console.log(arr, arr.length, Object.keys(arr));
