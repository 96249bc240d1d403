// console.log of typed arrays of each element kind
console.log(new Uint8Array([0, 127, 255, 256, -1]));
console.log(new Int8Array([127, 128, -129]));
console.log(new Uint8ClampedArray([300, -5, 1.5, 2.5]));
console.log(new Int16Array(3), new Uint16Array([65535]));
console.log(new Int32Array([2 ** 31]), new Uint32Array([-1]));
console.log(new Float32Array([0.1, 1 / 3, 16777217]));
console.log(new Float64Array([0.1, 1 / 3]));
console.log(new Uint8Array(40));
console.log(new Uint8Array(120).map((_, i) => i));
console.log({ bytes: new Uint8Array([1, 2, 3]) });
console.log([new Int16Array([1, -1])]);
