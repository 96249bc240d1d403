// why: unbounded recursion in node is a catchable RangeError, never a crash of the sandbox or host
// tiers: runc runsc session
// expect: ok
// has: ok caught
function f(n) { return f(n + 1) + 1; }
try { f(0); console.log('BREACH no stack limit'); } catch (e) { console.log('ok caught ' + e.name); }
