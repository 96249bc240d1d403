// console.log of an array of small records (typical query result)
const rows = [
  { id: 1, name: 'Ann', email: 'ann@example.com', active: true },
  { id: 2, name: 'Ben', email: 'ben@example.com', active: false },
  { id: 3, name: 'Cat', email: 'cat@example.com', active: true },
];
console.log(rows);
console.log(rows.map(({ id, name }) => ({ id, name })));
console.log(rows.map(r => [r.id, r.active]));
console.log([{ a: 1 }, { b: 2 }]);
