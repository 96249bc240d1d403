// JSON.parse / JSON.stringify round-trip of nested data with unicode and escapes
const text = '{"name":"Zoë","tags":["a","b"],"nested":{"n":1.5e3,"ok":true,"nil":null},"esc":"line\\nbreak \\"q\\" \\u00e9"}';
const obj = JSON.parse(text);
console.log(obj.name, obj.tags.length, obj.nested.n, obj.esc);
const back = JSON.stringify(obj);
console.log(back);
console.log(back === JSON.stringify(JSON.parse(back)));
console.log(JSON.stringify({ u: undefined, f() {}, s: Symbol('x'), n: NaN, i: -Infinity, z: -0 }));
console.log(JSON.stringify([undefined, function () {}, Symbol('y')]));
console.log(JSON.stringify('\u2028\u2029\ud800'), JSON.stringify('\x07\t'));
console.log(JSON.stringify(new Date(Date.UTC(2024, 1, 29, 12, 0, 0))));
try { JSON.stringify({ big: 10n }); } catch (e) { console.log(e.name); }
