// console.log of strings with quotes, control characters and unicode inside containers
console.log(['single \' quote', 'double " quote', 'both \' and "', 'all \' " `']);
console.log({ ctrl: '\x00\x01\x1f\x7f', tab: 'a\tb', cr: 'a\rb', nl: 'a\nb', bs: 'back\\slash' });
console.log(['\u200b zero width', 'é', '日本', '😀', '\u{1F468}\u200D\u{1F469}']);
console.log(['\ud800 lone', 'ok'], { esc: '\x1b[31mred\x1b[0m' });
console.log('top-level keeps raw: tab[\t] backslash[\\]');
console.log([`multi
line
string`]);
