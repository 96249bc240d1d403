// Conditional polyfills on globalThis: only define what is missing, then use them
const added = [];
if (typeof globalThis.structuredClone !== 'function') { globalThis.structuredClone = v => JSON.parse(JSON.stringify(v)); added.push('structuredClone'); }
if (!Array.prototype.findLast) { added.push('findLast'); }
if (typeof globalThis.myCustomGlobal === 'undefined') { globalThis.myCustomGlobal = { version: 1 }; added.push('myCustomGlobal'); }
console.log('polyfilled:', added);
console.log(myCustomGlobal.version, 'myCustomGlobal' in globalThis, delete globalThis.myCustomGlobal, typeof myCustomGlobal);
var declaredVar = 'var becomes a global property';
let declaredLet = 'let does not';
console.log(globalThis.declaredVar, globalThis.declaredLet, Object.hasOwn(globalThis, 'declaredVar'));
globalThis.implicit = 5;
console.log(implicit + 1);
