// console.assert (prints to stderr only on failure), console.count/countReset
console.assert(1 === 1, 'this never prints');
console.assert(1 === 2, 'assertion message with value', 42);
console.assert(false);
console.assert(0, { detail: 'object detail' });
for (const k of ['a', 'b', 'a', 'a', 'b']) console.count(k);
console.count();
console.count();
console.countReset('a');
console.count('a');
console.log('done');
