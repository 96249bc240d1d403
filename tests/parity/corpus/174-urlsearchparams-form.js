// Form-style encoding of a nested object into URLSearchParams (bracket notation) and back
function flatten(obj, prefix = '', out = new URLSearchParams()) {
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix ? `${prefix}[${k}]` : k;
    if (v !== null && typeof v === 'object') flatten(v, key, out);
    else out.append(key, v === null ? '' : String(v));
  }
  return out;
}
const form = { user: { name: 'Ada Lovelace', email: 'ada@example.com' }, items: ['x', 'y & z'], agree: true, note: null };
const params = flatten(form);
console.log(params.toString());
console.log(decodeURIComponent(params.toString()));
const parsed = {};
for (const [k, v] of new URLSearchParams(params.toString())) {
  const path = k.replace(/\]/g, '').split('[');
  let node = parsed;
  path.forEach((p, i) => { if (i === path.length - 1) node[p] = v; else node = node[p] ??= {}; });
}
console.log(parsed);
