// Regex named capture groups, backreferences and replace with $<name>
const re = /(?<year>\d{4})-(?<month>\d{2})-(?<day>\d{2})/;
const m = '2024-07-04 release'.match(re);
console.log(m.groups.year, m.groups.month, m.groups.day, m.index);
console.log(JSON.stringify(m.groups));
console.log('2024-07-04'.replace(re, '$<day>/$<month>/$<year>'));
console.log('2024-07-04'.replace(re, (...args) => { const g = args.at(-1); return `${g.month}.${g.day}`; }));
const dup = /(?<ch>\w)\k<ch>/g;
console.log('aabbcdde'.match(dup));
const { groups: { user, domain } } = /(?<user>[^@]+)@(?<domain>.+)/.exec('alice@example.org');
console.log(user, domain);
console.log(/(?<a>x)|(?<b>y)/.exec('y').groups.a);
