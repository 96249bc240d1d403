// Buffer.from with utf8/hex/base64 and toString back in each encoding
const b = Buffer.from('Hello, Wörld! ✓');
console.log(b);
console.log(b.length, b.toString(), b.toString('hex'));
console.log(b.toString('base64'), b.toString('base64url'));
console.log(Buffer.from('48656c6c6f', 'hex').toString('utf8'));
console.log(Buffer.from('SGVsbG8gV29ybGQ=', 'base64').toString());
console.log(Buffer.from([104, 105, 256, -1]), Buffer.from('abc').toString('latin1'));
console.log(Buffer.isBuffer(b), b instanceof Uint8Array, Buffer.alloc(4), Buffer.alloc(3, 'ab'));
console.log(JSON.stringify(Buffer.from('hi')));
