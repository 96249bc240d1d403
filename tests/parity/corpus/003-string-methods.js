// Common String.prototype methods: slice, split, trim, at, includes, repeat
const s = '  The quick brown fox jumps over the lazy dog  ';
const t = s.trim();
console.log(JSON.stringify(t));
console.log(t.length, t.toUpperCase());
console.log(t.split(' ').length, t.split(' ').map(w => w[0]).join(''));
console.log(t.slice(4, 9), t.substring(10, 15), t.at(-1), t.at(0));
console.log(t.indexOf('o'), t.lastIndexOf('o'), t.includes('fox'), t.startsWith('The'), t.endsWith('dog'));
console.log('ab'.repeat(4), '-'.repeat(10));
console.log(JSON.stringify(s.trimStart()), JSON.stringify(s.trimEnd()));
console.log('a,b,,c'.split(','), 'abc'.split(''));
console.log('Straße'.toUpperCase(), 'İ'.toLowerCase().length);
console.log('x'.codePointAt(0), String.fromCharCode(72, 105), '😀'.length, [...'😀'].length);
console.log('abc'.localeCompare('abd'), 'a' < 'B', 'a'.normalize('NFD') === 'a');
