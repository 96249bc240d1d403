// Map.groupBy with object keys and iteration over the resulting Map
const tiers = { low: { label: 'low' }, high: { label: 'high' } };
const readings = [3, 18, 7, 25, 12, 1, 30];
const grouped = Map.groupBy(readings, v => (v >= 10 ? tiers.high : tiers.low));
console.log(grouped.size, grouped.get(tiers.high), grouped.get(tiers.low));
for (const [key, vals] of grouped) console.log(key.label, vals.length, Math.max(...vals));
const words = ['apple', 'avocado', 'banana', 'blueberry', 'cherry'];
const byInitial = Map.groupBy(words, w => w[0]);
console.log([...byInitial.keys()].join(''), [...byInitial.values()].map(v => v.length));
console.log(Map.groupBy([], x => x).size);
