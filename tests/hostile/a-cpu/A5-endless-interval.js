// why: a setInterval that is never cleared keeps the event loop alive forever; the run ends at its deadline (on wasm the host's timer wait checks it), not in a hang
// tiers: wasm runc runsc
// pool: no
// expect: timeout
// timeout_ms: 1000
let ticks = 0;
setInterval(() => { ticks++; }, 1);
console.log('armed');
