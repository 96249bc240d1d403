// why: structuredClone copies without end: the memory cap ends the run (wasm: the store limiter traps; docker: the cgroup limit or V8's heap limit ends node), never the daemon or another run
// tiers: wasm runc runsc
// pool: no
// expect: fails
// timeout_ms: 30000
const seed = Array.from({ length: 1 << 16 }, (_, i) => ({ i, s: 'v' + i, when: new Date(i), tags: new Set([i]) }));
const keep = [];
for (;;) keep.push(structuredClone(seed));
