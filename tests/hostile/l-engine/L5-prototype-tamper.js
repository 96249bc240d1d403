// why: a guest that rewrites JSON, console, Object and Array prototypes corrupts only itself: a run's output still arrives; a session's JavaScript interpreter (which shares the cell's realm) ends, and the session goes on
// tiers: wasm runc runsc session
// expect: ok
// expect.session: fails
// has.wasm: ok tampered
// has.runc: ok tampered
// has.runsc: ok tampered
const log = console.log;
JSON.stringify = () => 'pwned';
Object.prototype.toJSON = () => 'pwned';
Array.prototype.push = () => 0;
String.prototype.toString = () => 'pwned';
log('ok tampered');
