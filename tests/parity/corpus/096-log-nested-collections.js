// console.log of collections nested inside each other and inside arrays
const graph = new Map([
  ['a', new Set(['b', 'c'])],
  ['b', new Set(['c'])],
  ['c', new Set()],
]);
console.log(graph);
console.log([new Set([1]), new Map([[1, 2]]), [new Set()]]);
console.log({ users: new Map([[1, { name: 'x', tags: new Set(['t']) }]]) });
console.log(new Set([new Set([new Set([1])])]));
console.log(new Map([[new Map([['k', 'v']]), 'map as key']]));
