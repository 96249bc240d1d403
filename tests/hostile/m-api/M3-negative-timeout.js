// why: a negative deadline is refused as invalid
// tiers: wasm runc runsc
// timeout_ms: -5
// expect: refused invalid_argument
console.log('BREACH ran with a negative deadline');
