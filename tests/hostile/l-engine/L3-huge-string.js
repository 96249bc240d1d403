// why: a string past the engine's or the run's memory limits is a catchable error, not a host failure
// tiers: wasm runc runsc session
// expect: ok
// has: ok caught
try { const s = 'x'.repeat(2 ** 30); console.log('BREACH made ' + s.length); } catch (e) { console.log('ok caught ' + e.name); }
