// why: unbounded recursion in QuickJS exhausts the wasm stack (max_wasm_stack) and traps: the run ends with exit 134 and the daemon's own stack is untouched
// tiers: wasm
// expect: fails
function f(n) { return f(n + 1) + 1; }
f(0);
console.log('BREACH no stack limit');
