// why: catastrophic regex backtracking inside the engine is still interrupted by the deadline
// tiers: wasm runc runsc session
// expect: timeout
// timeout_ms: 1500
/(a+)+$/.test('a'.repeat(64) + 'b');
