// console.log of Set instances: empty, primitives, objects, nested in objects
console.log(new Set());
console.log(new Set([1, 2, 3, 2, 1]));
console.log(new Set(['red', 'green', 'blue']));
console.log(new Set([{ a: 1 }, [1, 2], null, undefined, NaN]));
console.log({ tags: new Set(['x', 'y']), count: 2 });
console.log(new Set('hello world'));
console.log(new Set(Array.from({ length: 120 }, (_, i) => i)).size, new Set(Array.from({ length: 30 }, (_, i) => i)));
