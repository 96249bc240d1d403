// Aggregation report printed as nested object with Map and sorted arrays
const sales = [
  ['north', 'apples', 30], ['south', 'pears', 12], ['north', 'pears', 7],
  ['east', 'apples', 18], ['south', 'apples', 25], ['north', 'apples', 5], ['east', 'plums', 40],
];
const byRegion = new Map();
for (const [region, item, qty] of sales) {
  const r = byRegion.get(region) ?? { total: 0, items: {} };
  r.total += qty;
  r.items[item] = (r.items[item] ?? 0) + qty;
  byRegion.set(region, r);
}
console.log(byRegion);
const ranking = [...byRegion].sort((a, b) => b[1].total - a[1].total).map(([k, v]) => [k, v.total]);
console.log(ranking);
console.log({ regions: byRegion.size, grand: ranking.reduce((s, [, t]) => s + t, 0), top: ranking[0] });
