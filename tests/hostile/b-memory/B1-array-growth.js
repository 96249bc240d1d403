// why: unbounded allocation hits the memory cap (wasm: the store limiter traps; docker: the cgroup limit kills node) and ends only this run; under runsc the OOM kill takes the whole sandbox, so a runsc session ends, typed (main_process_ended)
// tiers: wasm runc runsc session
// ends_session: session-runsc
// expect.session-runsc: stops
// expect: fails
// timeout_ms: 30000
const keep = [];
for (;;) keep.push(new Array(1 << 20).fill(keep.length));
