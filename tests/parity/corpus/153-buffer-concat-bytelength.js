// Buffer.concat, Buffer.byteLength across encodings, slicing/subarray sharing memory
const parts = [Buffer.from('head-'), Buffer.from('body-'), Buffer.from('tail')];
const whole = Buffer.concat(parts);
console.log(whole.toString(), whole.length, Buffer.concat(parts, 7).toString());
for (const s of ['abc', 'é', '€', '😀', '日本語']) console.log(JSON.stringify(s), s.length, Buffer.byteLength(s), Buffer.byteLength(s, 'utf16le'));
console.log(Buffer.byteLength('aGVsbG8=', 'base64'), Buffer.byteLength('deadbeef', 'hex'));
const sub = whole.subarray(0, 4);
sub[0] = 'H'.charCodeAt(0);
console.log(whole.toString(), sub.toString());
console.log(Buffer.compare(Buffer.from('a'), Buffer.from('b')), Buffer.from('x').equals(Buffer.from('x')));
console.log(whole.indexOf('body'), whole.includes('tail'), whole.toString('utf8', 5, 9));
