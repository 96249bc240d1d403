// Date.parse on ISO 8601 strings with explicit offsets (timezone-independent)
const inputs = [
  '2024-01-15T10:20:30Z',
  '2024-01-15T10:20:30.123+02:00',
  '2024-01-15T10:20:30-05:30',
  '2024-01-15',
  '2024-02-30T00:00:00Z',
  '+010000-01-01T00:00:00Z',
  '2024-13-01T00:00:00Z',
];
for (const s of inputs) {
  const t = Date.parse(s);
  console.log(s.padEnd(32), Number.isNaN(t) ? 'Invalid' : new Date(t).toISOString());
}
const a = new Date('2024-03-31T01:59:59Z'), b = new Date('2024-03-31T03:00:00Z');
console.log((b - a) / 1000, 'seconds apart');
