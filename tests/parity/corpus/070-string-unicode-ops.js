// Unicode string handling: code points, normalization, surrogate pairs, isWellFormed
const s = 'naïve café 👩‍💻 ñ';
console.log(s.length, [...s].length, Array.from(s).slice(-3));
console.log([...'👩‍💻'].map(c => c.codePointAt(0).toString(16)));
console.log('é'.normalize('NFD').length, 'e\u0301'.normalize('NFC').length, 'e\u0301' === 'é');
console.log(String.fromCodePoint(0x1F600, 0x41), '\u{1F680}'.codePointAt(0));
console.log('ab\uD800'.isWellFormed(), 'ab\uD800'.toWellFormed().codePointAt(2).toString(16), 'abc'.isWellFormed());
const reversedNaive = s.split('').reverse().join('');
const reversedCp = [...'abc😀'].reverse().join('');
console.log(reversedCp, reversedNaive.isWellFormed());
console.log(encodeURIComponent('a b&c/é😀'), decodeURIComponent('%E2%9C%93'), encodeURI('http://x.y/a b?q=ü'));
console.log(escape === undefined ? 'no escape' : escape('ä b'), unescape('%u00e4'));
