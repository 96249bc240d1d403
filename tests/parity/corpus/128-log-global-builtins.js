// console.log of built-in namespace objects and constructors (stable representations)
console.log(Math.PI, Math.E, Math.SQRT2);
console.log(Object.prototype.toString.call(Math), Object.prototype.toString.call(JSON), Object.prototype.toString.call(Reflect));
console.log(Array, Object, Map, Promise, Symbol, BigInt);
console.log(typeof globalThis, globalThis === this, typeof window, typeof self);
console.log(Object.prototype.toString.call(globalThis));
