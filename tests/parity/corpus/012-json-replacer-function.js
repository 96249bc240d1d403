// JSON.stringify with a replacer function that redacts, transforms and drops keys
const data = {
  user: 'kim', password: 'pw', created: new Date(Date.UTC(2023, 11, 31, 23, 59, 59)),
  score: 12.3456, tags: new Set(['x', 'y']), lookup: new Map([['k', 1]]), big: 123n,
};
const out = JSON.stringify(data, function (key, value) {
  if (key === 'password') return '[redacted]';
  if (typeof value === 'number') return Math.round(value * 100) / 100;
  if (typeof value === 'bigint') return value.toString() + 'n';
  if (value instanceof Set) return [...value];
  if (value instanceof Map) return Object.fromEntries(value);
  if (key === 'drop') return undefined;
  return value;
}, 2);
console.log(out);
const keys = [];
JSON.stringify({ a: { b: [1, { c: 2 }] } }, (k, v) => { keys.push(k === '' ? '<root>' : k); return v; });
console.log(keys.join(' '));
