// Typed array methods: from/of, set, subarray vs slice, fill, sort, conversions, overflow
const ta = Int16Array.from([5, -3, 40000, 7]);
console.log(ta, ta.BYTES_PER_ELEMENT, ta.byteLength);
const f = Float32Array.of(3.5, -1.25, 2);
console.log(f.sort(), f.map(x => x * 2), Array.from(f));
const big = new Uint8Array(10);
big.set([1, 2, 3], 4);
big.fill(9, 0, 2);
console.log(big.join(','), big.subarray(3, 7).join(','), big.slice(-3).join(','));
const view = big.subarray(4, 6);
view[0] = 100;
console.log(big[4], big.slice(4, 5)[0] === 100);
console.log(new Uint16Array(new Uint8Array([1, 2, 3]).buffer.slice(0, 2))[0]);
console.log(Uint8Array.from('123', Number).reduce((a, b) => a + b), [...new Int8Array([1, 2]).entries()]);
console.log(Object.prototype.toString.call(new Float64Array(1)), new Int32Array(2).fill(-1).at(-1));
