// Object.groupBy grouping records (null-prototype result) printed via JSON and entries
const inventory = [
  { name: 'asparagus', type: 'vegetables', quantity: 5 },
  { name: 'bananas', type: 'fruit', quantity: 0 },
  { name: 'goat', type: 'meat', quantity: 23 },
  { name: 'cherries', type: 'fruit', quantity: 5 },
  { name: 'fish', type: 'meat', quantity: 22 },
];
const byType = Object.groupBy(inventory, ({ type }) => type);
console.log(Object.keys(byType));
console.log(Object.getPrototypeOf(byType) === null, typeof byType.hasOwnProperty);
for (const [k, items] of Object.entries(byType)) console.log(k, items.map(i => i.name).join(','));
const stock = Object.groupBy(inventory, ({ quantity }) => (quantity > 5 ? 'ok' : 'restock'));
console.log(JSON.stringify(stock, ['restock', 'ok', 'name']));
const byLen = Object.groupBy(['a', 'bb', 'cc', 'ddd'], s => s.length);
console.log(JSON.stringify(byLen));
