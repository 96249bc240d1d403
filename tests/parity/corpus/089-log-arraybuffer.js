// console.log of ArrayBuffer (incl. resizable), DataView fields, and typed-array subarrays
const buf = new ArrayBuffer(8);
const view = new Uint8Array(buf);
view.set([1, 2, 3, 250]);
console.log(buf);
console.log(new ArrayBuffer(0));
console.log(view.subarray(1, 3), view.subarray(1, 3).byteOffset);
const dv = new DataView(buf, 2, 4);
console.log(dv.byteLength, dv.byteOffset, dv.getUint8(0));
console.log(new ArrayBuffer(60));
const resizable = new ArrayBuffer(4, { maxByteLength: 16 });
resizable.resize(6);
console.log(resizable.byteLength, resizable.maxByteLength, resizable.resizable);
console.log(buf.slice(0, 2), ArrayBuffer.isView(view), ArrayBuffer.isView(buf));
