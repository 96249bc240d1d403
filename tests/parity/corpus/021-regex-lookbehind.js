// Regex lookbehind and lookahead assertions, positive and negative
const prices = 'USD 10, $20, €30, $4.50, 60';
console.log(prices.match(/(?<=\$)\d+(\.\d+)?/g));
console.log(prices.match(/(?<!\$)\b\d+\b(?!\.)/g));
console.log('foobar foobaz'.replace(/foo(?=baz)/, 'XXX'));
console.log('1234567890'.replace(/\B(?=(\d{3})+(?!\d))/g, ','));
console.log('camelCaseStringHere'.split(/(?<=[a-z])(?=[A-Z])/));
console.log('a1b2c3'.replace(/(?<=\d)/g, '|'));
const pw = ['abc', 'Abcdef1!', 'abcdefgh', 'ABCDEFG1a'];
const strong = /^(?=.*[a-z])(?=.*[A-Z])(?=.*\d).{8,}$/;
console.log(pw.map(p => `${p}:${strong.test(p)}`).join(' '));
