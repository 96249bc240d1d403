// Minimal CSV parser with quoted fields, then aggregate into per-city stats
const csv = `name,city,age,score
"Smith, John",Boston,34,88.5
Jane Doe,"New York",28,92
"O""Brien",Boston,45,79.25
Li Wei,Chicago,31,
Ana,"New York",22,95.5`;
function parseLine(line) {
  const out = []; let cur = '', q = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (q) { if (ch === '"' && line[i + 1] === '"') { cur += '"'; i++; } else if (ch === '"') q = false; else cur += ch; }
    else if (ch === '"') q = true; else if (ch === ',') { out.push(cur); cur = ''; } else cur += ch;
  }
  out.push(cur);
  return out;
}
const [header, ...lines] = csv.split('\n').map(parseLine);
const rows = lines.map(cols => Object.fromEntries(header.map((h, i) => [h, cols[i]])));
console.log(rows.map(r => r.name));
const stats = {};
for (const r of rows) {
  const s = (stats[r.city] ??= { n: 0, ageSum: 0, scores: [] });
  s.n++; s.ageSum += Number(r.age); if (r.score) s.scores.push(Number(r.score));
}
for (const [city, s] of Object.entries(stats)) {
  const avg = s.scores.length ? (s.scores.reduce((a, b) => a + b) / s.scores.length).toFixed(2) : 'n/a';
  console.log(`${city}: n=${s.n} avgAge=${(s.ageSum / s.n).toFixed(1)} avgScore=${avg}`);
}
