// console.table with an array of objects and an object of objects
const rows = [
  { name: 'Widget', price: 9.99, qty: 3 },
  { name: 'Gadget', price: 24.5, qty: 1 },
  { name: 'Doohickey', price: 0.5, qty: 100, note: 'bulk' },
];
console.table(rows);
console.table({ alice: { age: 30, city: 'Oslo' }, bob: { age: 25, city: 'Lima' } });
console.table(rows, ['name', 'qty']);
