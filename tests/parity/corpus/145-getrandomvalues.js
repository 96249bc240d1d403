// crypto.getRandomValues: fills typed arrays in place; print only lengths/types, never values
const a = new Uint8Array(16);
const ret = crypto.getRandomValues(a);
console.log(ret === a, a.length, a.constructor.name);
const b = crypto.getRandomValues(new Uint32Array(4));
console.log(b.length, b.every(x => Number.isInteger(x) && x >= 0 && x < 2 ** 32));
console.log(crypto.getRandomValues(new BigUint64Array(2)).length);
try { crypto.getRandomValues(new Float64Array(2)); } catch (e) { console.log('float array:', e.name); }
try { crypto.getRandomValues(new Uint8Array(65537)); } catch (e) { console.log('too big:', e.name); }
console.log(crypto.getRandomValues(new Uint8Array(0)).length);
console.log(typeof crypto, typeof crypto.subtle, typeof crypto.getRandomValues);
