// Which Buffer operations copy and which share memory: from(buffer) copies; slice, subarray and from(arrayBuffer) share
const original = Buffer.from('hello');
const copied = Buffer.from(original);
const sliced = original.slice(0, 2);
const sub = original.subarray(3);
const shared = Buffer.from(original.buffer, original.byteOffset, original.length);
original[0] = 0x48; // 'H'
original[4] = 0x4f; // 'O'
console.log(copied.toString(), sliced.toString(), sub.toString(), shared.toString());
const fromView = Buffer.from(new Uint8Array([1, 2, 3]));
const typed = new Uint16Array([0x102, 0x304]);
console.log(fromView, Buffer.from(typed), Buffer.from(typed.buffer));
console.log(Buffer.from('aGVs bG8=\n', 'base64').toString(), Buffer.from('zz12', 'hex'), Buffer.from('12zz', 'hex'));
