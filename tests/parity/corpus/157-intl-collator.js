// Intl.Collator en-US: case/accents sensitivity, numeric collation, sorting names
const names = ['zoë', 'Zoe', 'álvaro', 'Alvaro', 'item10', 'item2', 'item1', 'émile', 'Emile', 'bob'];
console.log([...names].sort(new Intl.Collator('en-US').compare));
console.log([...names].sort(new Intl.Collator('en-US', { numeric: true }).compare));
const base = new Intl.Collator('en-US', { sensitivity: 'base' });
console.log(base.compare('a', 'A'), base.compare('a', 'á'), base.compare('a', 'b'));
const accent = new Intl.Collator('en-US', { sensitivity: 'accent' });
console.log(accent.compare('a', 'A'), accent.compare('a', 'á'));
console.log(new Intl.Collator('en-US', { caseFirst: 'upper' }).compare('a', 'A'));
console.log(['b', 'a', 'C'].sort(new Intl.Collator('en-US').compare), ['b', 'a', 'C'].sort());
