// structuredClone deep copies nested objects/arrays; the clone is independent
const original = { name: 'cfg', list: [1, 2, { deep: true }], nested: { a: { b: 'c' } }, n: null, u: undefined };
const copy = structuredClone(original);
copy.list[2].deep = false;
copy.nested.a.b = 'changed';
console.log(original.list[2].deep, original.nested.a.b, copy.list[2].deep, copy.nested.a.b);
console.log(copy, copy !== original, copy.list !== original.list);
const cyclic = { id: 1 };
cyclic.self = cyclic;
const cc = structuredClone(cyclic);
console.log(cc.self === cc, cc !== cyclic);
console.log(structuredClone([NaN, -0, Infinity, 'str', true, 10n]));
console.log(structuredClone(null), structuredClone(42), structuredClone('x'));
