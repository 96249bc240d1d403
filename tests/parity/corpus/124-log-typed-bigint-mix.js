// console.log of records mixing BigInt, typed arrays and Dates (like a DB row)
const row = {
  id: 123456789012345678901234567890n,
  checksum: new Uint8Array([0xde, 0xad, 0xbe, 0xef]),
  created: new Date(Date.UTC(2022, 0, 2, 3, 4, 5)),
  flags: new Set(['a']),
  score: -0,
};
console.log(row);
console.log([row.id, row.checksum]);
