// console.log of Maps whose keys and values are complex objects, arrays, functions
const handlers = new Map([
  ['click', function onClick() {}],
  ['keydown', (e) => e],
  [Symbol('custom'), { once: true }],
  [42, [1, 2, 3]],
  [null, 'null key'],
  [undefined, 'undefined key'],
]);
console.log(handlers);
console.log(handlers.size, [...handlers.keys()].map(k => typeof k));
