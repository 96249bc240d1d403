// console.log output is unchanged by freeze/seal; non-enumerable props hidden
const f = Object.freeze({ a: 1, list: Object.freeze([1, 2]) });
console.log(f, Object.isFrozen(f));
const sealed = Object.seal({ b: 2 });
console.log(sealed);
const arr = [1, 2, 3];
Object.defineProperty(arr, 'hiddenProp', { value: 'h', enumerable: false });
arr.visibleProp = 'v';
console.log(arr);
const fn = Object.freeze(function frozenFn() {});
console.log(fn);
