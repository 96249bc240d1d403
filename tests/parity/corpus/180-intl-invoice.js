// Invoice rendering with Intl.NumberFormat, DateTimeFormat (UTC) and ListFormat, en-US
const money = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });
const qtyFmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });
const date = new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', year: 'numeric', month: 'long', day: 'numeric' });
const invoice = {
  number: 1042, issued: Date.UTC(2024, 10, 28), dueDays: 30,
  lines: [['Consulting (hours)', 12.5, 150], ['Hosting (months)', 3, 49.99], ['Domain renewal', 1, 12]],
  taxRate: 0.0825,
};
console.log(`Invoice #${invoice.number} — issued ${date.format(invoice.issued)}, due ${date.format(invoice.issued + invoice.dueDays * 864e5)}`);
let subtotal = 0;
for (const [desc, qty, price] of invoice.lines) {
  const amt = qty * price; subtotal += amt;
  console.log(`${desc.padEnd(20)}${qtyFmt.format(qty).padStart(6)} x ${money.format(price).padStart(9)} = ${money.format(amt).padStart(10)}`);
}
const tax = subtotal * invoice.taxRate;
console.log(`${'Subtotal'.padEnd(40)}${money.format(subtotal).padStart(10)}`);
console.log(`${('Tax ' + new Intl.NumberFormat('en-US', { style: 'percent', minimumFractionDigits: 2 }).format(invoice.taxRate)).padEnd(40)}${money.format(tax).padStart(10)}`);
console.log(`${'Total'.padEnd(40)}${money.format(subtotal + tax).padStart(10)}`);
console.log('Payable by', new Intl.ListFormat('en-US', { type: 'disjunction' }).format(['card', 'ACH', 'wire']));
