// Buffer binary read/write helpers: writeUInt32BE, readInt16LE, floats, and hex dump
const buf = Buffer.alloc(16);
buf.writeUInt32BE(0xdeadbeef, 0);
buf.writeInt16LE(-2, 4);
buf.writeFloatBE(1.5, 6);
buf.writeUInt8(255, 10);
buf.writeBigUInt64LE(2n ** 40n, 8);
console.log(buf.toString('hex'));
console.log(buf.readUInt32BE(0).toString(16), buf.readInt16LE(4), buf.readFloatBE(6), buf.readBigUInt64LE(8));
const dump = b => b.toString('hex').match(/.{1,8}/g).join(' ');
console.log(dump(buf));
console.log(Buffer.from('abcdef').swap16().toString(), Buffer.from([1, 2, 3, 4]).reverse());
try { buf.readUInt32BE(14); } catch (e) { console.log(e.name, e.code); }
