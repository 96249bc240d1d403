// console.dir with default depth, depth 0, depth null and depth 4; strings and arrays via dir
const deep = { a: { b: { c: { d: { e: { f: 'bottom' } } } } } };
console.dir(deep);
console.dir(deep, { depth: 0 });
console.dir(deep, { depth: null });
console.dir(deep, { depth: 4 });
console.dir('a string via dir');
console.dir([1, 'two', { three: 3 }]);
