// console.log of symbols: descriptions, well-known symbols, symbol keys and values
const s1 = Symbol('session');
const s2 = Symbol();
const s3 = Symbol.for('global.key');
console.log(s1, s2, s3, Symbol.iterator, Symbol.asyncIterator);
console.log([s1, s2, Symbol('')]);
console.log({ [s1]: 'value under symbol', regular: 1, sym: s3 });
console.log(s1.toString(), s1.description, s2.description, Symbol.keyFor(s3), Symbol.keyFor(s1));
console.log(Object.getOwnPropertySymbols({ [s1]: 1, [Symbol.toStringTag]: 'X' }));
console.log(Object(s1), typeof Object(s1));
