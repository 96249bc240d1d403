// Array map/filter/reduce pipeline over a list of order records
const orders = [
  { id: 1, customer: 'ann', amount: 120.5, status: 'paid' },
  { id: 2, customer: 'bob', amount: 75, status: 'refunded' },
  { id: 3, customer: 'ann', amount: 33.25, status: 'paid' },
  { id: 4, customer: 'cy', amount: 410, status: 'paid' },
  { id: 5, customer: 'bob', amount: 12.75, status: 'pending' },
];
const paid = orders.filter(o => o.status === 'paid');
const totals = paid.reduce((acc, o) => {
  acc[o.customer] = (acc[o.customer] || 0) + o.amount;
  return acc;
}, {});
console.log(paid.map(o => o.id).join(','));
for (const [who, amt] of Object.entries(totals)) {
  console.log(`${who.padEnd(5)} ${amt.toFixed(2).padStart(8)}`);
}
console.log('grand total:', paid.reduce((s, o) => s + o.amount, 0));
console.log(orders.some(o => o.amount > 400), orders.every(o => o.amount > 10));
