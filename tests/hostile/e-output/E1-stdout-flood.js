// why: a flood of output is capped at the limit and flagged truncated; the daemon's memory does not follow it (node on docker may be killed by its own memory cap while buffering the flood: the run still answers, capped)
// tiers: wasm runc runsc session
// expect: ok
// expect.runc: ends
// expect.runsc: ends
// truncated: yes
const s = 'x'.repeat(65536);
for (let i = 0; i < 2000; i++) console.log(s);
