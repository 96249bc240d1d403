// Array.prototype.sort: default string order, numeric comparator, stability, multi-key
console.log([10, 9, 1, 100, 25].sort());
console.log([10, 9, 1, 100, 25].sort((a, b) => a - b));
const people = [
  { name: 'Eve', age: 30 }, { name: 'Bob', age: 25 }, { name: 'Amy', age: 30 },
  { name: 'Cal', age: 25 }, { name: 'Dee', age: 35 },
];
const byAge = [...people].sort((a, b) => a.age - b.age);
console.log(byAge.map(p => `${p.name}:${p.age}`).join(' '));
const multi = [...people].sort((a, b) => b.age - a.age || a.name.localeCompare(b.name));
console.log(multi.map(p => p.name).join(' '));
console.log(['b', 'a', 'C', 'B', 'c', 'A'].sort());
console.log([undefined, 3, null, 1, undefined, 2].sort());
console.log(['réservé', 'Premier', 'Cliché', 'communiqué', 'café', 'Adieu'].sort((a, b) => a.localeCompare(b, 'en-US')));
