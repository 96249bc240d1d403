// why: a floor above the daemon's proven tier is refused before any code runs
// tiers: wasm runc runsc
// floor: vm
// expect: refused failed_precondition
console.log('BREACH ran below the floor');
