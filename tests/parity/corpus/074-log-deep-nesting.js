// console.log depth limit: objects/arrays deeper than 2 levels print as [Object]/[Array]
const deep = { l1: { l2: { l3: { l4: { l5: 'bottom' } } } } };
console.log(deep);
console.log([[[[['deep array']]]]]);
console.log({ a: [{ b: [{ c: 1 }] }] });
const tree = { value: 1, children: [{ value: 2, children: [{ value: 4, children: [] }] }, { value: 3, children: [] }] };
console.log(tree);
console.log(JSON.stringify(tree));
console.log({ m: new Map([['k', { inner: { deeper: { deepest: 1 } } }]]) });
