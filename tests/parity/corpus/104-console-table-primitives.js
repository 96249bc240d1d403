// console.table with primitive arrays, nested arrays, Maps, Sets, and non-tabular input
console.table(['apple', 'banana', 'cherry']);
console.table([[1, 2], [3, 4, 5]]);
console.table(new Map([['x', 1], ['y', 2]]));
console.table(new Set(['a', 'b']));
console.table('just a string');
console.table(42);
console.table([{ a: 1 }, 'mixed', 3]);
console.table([{ unicode: 'héllo', emoji: 'ok' }, { unicode: '日本', emoji: 'x' }]);
