// String.prototype.matchAll with groups and indices, lastIndex behaviour
const log = 'GET /a 200 12ms\nPOST /b 500 340ms\nGET /c 404 3ms\nDELETE /d 204 8ms';
const re = /^(?<method>[A-Z]+) (?<path>\S+) (?<status>\d{3}) (?<ms>\d+)ms$/gm;
for (const m of log.matchAll(re)) {
  console.log(m.index, m.groups.method, m.groups.path, Number(m.groups.status), Number(m.groups.ms));
}
const all = [...'a1b22c333'.matchAll(/\d+/g)].map(m => [m[0], m.index]);
console.log(JSON.stringify(all));
try { 'abc'.matchAll(/b/); } catch (e) { console.log(e.name); }
const d = /(?<w>o+)/dg.exec('foo boo');
console.log(d.indices[0], d.indices.groups.w);
const sticky = /o/g; sticky.test('oo'); console.log(sticky.lastIndex);
