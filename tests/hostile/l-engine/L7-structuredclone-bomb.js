// why: structuredClone copies without end: the memory cap ends the run (wasm: the store limiter traps; docker: the cgroup limit or V8's heap limit ends node), never the daemon or another run
// tiers: wasm runc runsc
// pool: no
// expect: fails
// timeout_ms: 30000
// Each clone walks 1,024 objects (a Date, a Set, a string) and copies 16 MiB
// of buffers, so the cap comes within seconds on every tier, however busy the
// machine, and the deadline is never what ends it.
const seed = Array.from({ length: 1 << 10 }, (_, i) => ({
  i, s: 'v' + i, when: new Date(i), tags: new Set([i]), bytes: new Uint8Array(16384).fill(i & 255),
}));
const keep = [];
for (;;) keep.push(structuredClone(seed));
