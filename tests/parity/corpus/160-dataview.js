// DataView: mixed-endian reads/writes over an ArrayBuffer, parsing a binary header
const buf = new ArrayBuffer(24);
const dv = new DataView(buf);
dv.setUint32(0, 0x89504e47);
dv.setUint16(4, 0x0d0a, true);
dv.setInt8(6, -5);
dv.setFloat64(8, Math.PI);
dv.setBigInt64(16, -123456789n, true);
console.log(dv.getUint32(0).toString(16), dv.getUint32(0, true).toString(16));
console.log(dv.getUint16(4, true).toString(16), dv.getUint16(4).toString(16), dv.getInt8(6), dv.getUint8(6));
console.log(dv.getFloat64(8), dv.getFloat32(8), dv.getBigInt64(16, true), dv.getBigUint64(16, true));
console.log(Array.from(new Uint8Array(buf, 0, 8), b => b.toString(16).padStart(2, '0')).join(' '));
try { dv.getUint32(22); } catch (e) { console.log(e.name); }
const header = new DataView(new Uint8Array([0x42, 0x4d, 0x36, 0x00, 0x0c, 0x00, 0x00, 0x00]).buffer);
console.log(String.fromCharCode(header.getUint8(0), header.getUint8(1)), 'size', header.getUint32(2, true));
