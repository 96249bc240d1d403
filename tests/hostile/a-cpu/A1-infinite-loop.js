// why: a tight loop never yields; the deadline (epoch interruption on wasm, SIGKILL of the container or interpreter on docker) ends it
// tiers: wasm runc runsc session
// expect: timeout
// timeout_ms: 1000
for (;;) {}
