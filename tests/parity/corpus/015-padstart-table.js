// Text table layout using padStart/padEnd and computed column widths
const rows = [
  ['Item', 'Qty', 'Unit', 'Total'],
  ['Coffee beans', 2, 14.99, null],
  ['Filter papers', 10, 0.35, null],
  ['Grinder', 1, 89.5, null],
];
for (const r of rows.slice(1)) r[3] = (r[1] * r[2]).toFixed(2);
const cells = rows.map(r => r.map(String));
const widths = cells[0].map((_, i) => Math.max(...cells.map(r => r[i].length)));
const line = '+' + widths.map(w => '-'.repeat(w + 2)).join('+') + '+';
console.log(line);
cells.forEach((r, idx) => {
  console.log('| ' + r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ') + ' |');
  if (idx === 0) console.log(line);
});
console.log(line);
console.log('5'.padStart(3, '0'), 'abc'.padStart(2), 'x'.padEnd(6, 'ab') + '|');
