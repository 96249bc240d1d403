// String.prototype.replaceAll with strings, regexes, special patterns and callbacks
const tpl = 'Hello {name}, your code is {code}. Bye {name}!';
console.log(tpl.replaceAll('{name}', 'Ravi'));
const vars = { name: 'Ravi', code: 'X-9' };
console.log(tpl.replaceAll(/\{(\w+)\}/g, (_, k) => vars[k] ?? '?'));
console.log('a.b.c'.replaceAll('.', '/'), 'a.b.c'.replace('.', '/'));
console.log('x-y-z'.replaceAll('-', '$&$&'), 'abc'.replaceAll('b', "[$`|$']"));
console.log('aaa'.replaceAll('', '_'));
try { 'aaa'.replaceAll(/a/, 'b'); } catch (e) { console.log(e.name, e.message.includes('global')); }
console.log('snake_case_to_camel'.replace(/_([a-z])/g, (_, c) => c.toUpperCase()));
console.log('  many   spaces   here '.trim().replaceAll(/\s+/g, ' '));
