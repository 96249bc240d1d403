// Same values printed via console.log (inspect style) and JSON.stringify side by side
const values = [
  'text', 42, -0, NaN, null, undefined, true, [1, 'a'], { k: 'v' }, new Date(0),
  new Map([[1, 2]]), new Set([1]), [undefined], { u: undefined }, Infinity,
];
for (const v of values) {
  console.log(JSON.stringify(v), '<=>', v);
}
