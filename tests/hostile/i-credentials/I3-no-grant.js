// why: a run without a grant has no broker: no host global, no socket, no variable
// tiers: wasm runc runsc session
// expect: ok
// has: ok no broker
if (typeof host !== 'undefined') console.log('BREACH host global without a grant');
if (typeof process !== 'undefined' && process.env && process.env.HOST_API_SOCKET) console.log('BREACH socket variable without a grant');
console.log('ok no broker');
