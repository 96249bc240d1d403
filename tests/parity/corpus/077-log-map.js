// console.log of Map instances: empty, string/number keys, object keys, nested values
console.log(new Map());
console.log(new Map([['a', 1], ['b', 2]]));
console.log(new Map([[1, 'one'], [2, 'two'], [NaN, 'nan']]));
console.log(new Map([[{ id: 1 }, ['x', 'y']], [[1, 2], { nested: true }]]));
const big = new Map(Array.from({ length: 8 }, (_, i) => [`key${i}`, { idx: i, sq: i * i }]));
console.log(big);
console.log({ cache: new Map([['hits', 10], ['misses', 2]]) });
console.log([new Map([['inArray', true]])]);
