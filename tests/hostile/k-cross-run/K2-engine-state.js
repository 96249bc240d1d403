// why: globals, prototypes and the engine's heap do not survive into the next run (run twice: a fresh instance each time)
// tiers: wasm runc runsc
// runs: 2
// expect: ok
// has: ok fresh
if (globalThis.__plimsoll_k2 || Object.prototype.__plimsoll_k2) console.log('BREACH state survived');
globalThis.__plimsoll_k2 = 1;
Object.prototype.__plimsoll_k2 = 1;
console.log('ok fresh');
