// why: code past the size limit is refused as invalid, before anything runs
// tiers: wasm runc runsc
// pad: 2000000
// expect: refused invalid_argument
console.log('BREACH ran oversize code');
