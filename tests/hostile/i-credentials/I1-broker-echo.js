// why: an API that echoes the credential back does not hand it to the guest: the broker redacts every copy (the harness sweeps for the canary)
// tiers: wasm runc runsc
// grant: items
// expect: ok
// has: 200
// has: [redacted]
function show(a) { console.log(a.status, a.body); }
const r = host.get('/v1/items/1');
if (r && typeof r.then === 'function') r.then(show); else show(r);
