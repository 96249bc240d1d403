// console.log of arrays mixing every kind of value
const mixed = [
  1, 'two', null, undefined, true, 3n, Symbol('s'), NaN, -0, [4], { five: 5 },
  new Map([[6, 6]]), new Set([7]), () => 8, class Nine {}, new Date(0), /ten/, new Uint8Array([11]),
];
console.log(mixed);
console.log(mixed.length, mixed.map(v => typeof v).join(' '));
