// console.log of WeakMap, WeakSet and WeakRef (contents not inspectable)
const k = {};
const wm = new WeakMap([[k, 'value']]);
const ws = new WeakSet([k]);
console.log(wm);
console.log(ws);
console.log([wm, ws]);
console.log({ cache: new WeakMap() });
console.log(new WeakRef(k));
