// why: lone surrogates, NUL and escape sequences from the engine reach the caller as bytes in a valid answer
// tiers: wasm runc runsc session
// expect: ok
// has: after
console.log('\ud800\udfff\udc00 \u0000 \x1b]0;pwned\x07\x1b[2J');
console.log('after');
