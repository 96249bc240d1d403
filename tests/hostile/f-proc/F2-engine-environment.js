// why: the engine's view of its environment is empty of the daemon's: no variables, no filesystem or os modules
// tiers: wasm runc runsc session
// expect: ok
// lacks: HOSTILE_CANARY
// has: ok env
const env = (typeof process !== 'undefined' && process.env) ? process.env : {};
console.log(JSON.stringify(env));
if (typeof require !== 'function' && (typeof std !== 'undefined' || typeof os !== 'undefined')) console.log('BREACH quickjs std/os modules reachable');
console.log('ok env');
