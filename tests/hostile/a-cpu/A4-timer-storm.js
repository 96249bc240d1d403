// why: a timer storm: a thousand timers at 0 ms, each callback scheduling two more; the deadline or the memory cap ends the run, never the daemon or another run
// tiers: wasm runc runsc
// pool: no
// expect: stops
// timeout_ms: 2000
const storm = () => { setTimeout(storm, 0); setTimeout(storm, 0); };
for (let i = 0; i < 1000; i++) setTimeout(storm, 0);
