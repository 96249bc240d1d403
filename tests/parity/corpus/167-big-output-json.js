// Large output: pretty-printed JSON (indent 2) of generated records, several hundred lines
const statuses = ['active', 'suspended', 'pending'];
const records = Array.from({ length: 40 }, (_, i) => ({
  id: i + 1,
  username: `user_${String(i + 1).padStart(3, '0')}`,
  status: statuses[i % 3],
  created: new Date(Date.UTC(2023, i % 12, (i % 28) + 1)).toISOString(),
  scores: [i % 7, (i * 3) % 11],
  ratio: Math.round((i / 7) * 1000) / 1000,
}));
const json = JSON.stringify({ count: records.length, records }, null, 2);
console.log(json);
console.log('lines:', json.split('\n').length, 'bytes:', json.length);
