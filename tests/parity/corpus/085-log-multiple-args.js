// console.log with several arguments of mixed types separated by spaces
const user = { name: 'Kay', age: 29 };
console.log('User:', user, 'Age:', user.age, 'Adult?', user.age >= 18);
console.log('List:', [1, 2, 3], 'Empty:', [], {}, 'Nothing:', null, undefined);
console.log('a', 'b', 'c');
console.log(1, '1', [1], ['1'], { 1: 1 });
console.log('Result =>', new Map([['ok', true]]), new Set([1]));
console.log('multi\nline', 'second arg');
console.log(...['spread', 'into', 'args']);
