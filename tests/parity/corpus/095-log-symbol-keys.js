// console.log of objects with symbol-keyed, numeric and unusual string keys
const id = Symbol('id');
console.log({ [id]: 123, name: 'n' });
console.log({ 'needs-quotes': 1, valid_ident: 2, $dollar: 3, '0lead': 4, 'with space': 5, 'ünï': 6 });
console.log({ 2: 'b', 1: 'a', z: 'z', 10: 'ten', '-1': 'neg', 1.5: 'frac' });
console.log({ '': 'empty key', "it's": 'quote key', 'a"b': 'dq key' });
console.log({ [Symbol()]: 'anon sym', [Symbol.iterator]: 'iter' });
console.log({ true: 1, null: 2, class: 3, __proto__x: 4 });
