// Map and Set: insertion order, key equality (NaN, -0, objects), conversions
const m = new Map();
m.set('a', 1).set(1, 'number one').set('1', 'string one').set(NaN, 'nan').set(-0, 'zero');
console.log(m.size, m.get(1), m.get('1'), m.get(NaN), m.get(0), m.has(+0));
const keyObj = { id: 1 };
m.set(keyObj, 'obj');
console.log(m.get({ id: 1 }), m.get(keyObj));
m.delete('a');
console.log([...m.keys()].map(String).join(' | '));
const counts = new Map();
for (const w of 'the cat and the hat and the bat'.split(' ')) counts.set(w, (counts.get(w) ?? 0) + 1);
console.log(JSON.stringify([...counts]), JSON.stringify(Object.fromEntries(counts)));
const s = new Set([3, 1, 3, 2, 1, NaN, NaN, 0, -0]);
console.log(s.size, [...s]);
const dedup = [...new Set(['b', 'a', 'b', 'c', 'a'])];
console.log(dedup, new Set('mississippi').size);
const sorted = new Map([...counts].sort((x, y) => y[1] - x[1] || x[0].localeCompare(y[0])));
sorted.forEach((v, k) => console.log(k, v));
