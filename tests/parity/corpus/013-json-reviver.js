// JSON.parse with a reviver that rebuilds Dates and filters keys; parse errors
const payload = '{"when":"2024-03-10T08:30:00.000Z","count":"42","items":[{"at":"2020-01-01T00:00:00.000Z"}],"_internal":1}';
const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const obj = JSON.parse(payload, (key, value) => {
  if (key.startsWith('_')) return undefined;
  if (typeof value === 'string' && iso.test(value)) return new Date(value);
  if (key === 'count') return Number(value);
  return value;
});
console.log(obj.when instanceof Date, obj.when.getUTCHours(), obj.when.toISOString());
console.log(obj.count + 1, '_internal' in obj, obj.items[0].at.getUTCFullYear());
for (const bad of ['{bad json}', '[1,2,]', '', '{"a":1}x']) {
  try { JSON.parse(bad); console.log('parsed?!'); }
  catch (e) { console.log(e.name, e instanceof SyntaxError); }
}
