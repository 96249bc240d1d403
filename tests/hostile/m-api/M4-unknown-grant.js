// why: an unknown grant profile is refused exactly like a forbidden one (no enumeration), before anything runs
// tiers: wasm runc runsc
// grant: nosuch
// expect: refused permission_denied
console.log('BREACH ran with an unknown grant');
