// why: only canonical targets of listed routes reach the API: traversal, encoding, double slashes, queries, other methods and other routes are refused by the broker (the harness checks what the API saw)
// tiers: wasm runc runsc
// grant: items
// expect: ok
// has: ok refused 400,400,400,400,400,403,403,403,400
const tries = [
  ['GET', '/v1/items/../admin'], ['GET', '/v1/items/%2e%2e'], ['GET', '//v1/items/1'],
  ['GET', '/v1/items/1?x=1'], ['GET', '/v1/items/a%2Fb'], ['GET', '/v1/admin'],
  ['DELETE', '/v1/items/1'], ['PUT', '/v1/items'], ['GET', '/v1/items/./1'],
];
const out = [];
function next(i) {
  if (i === tries.length) { console.log('ok refused ' + out.join(',')); return; }
  const r = host.call(tries[i][0], tries[i][1]);
  const on = (a) => { out.push(a.status); next(i + 1); };
  if (r && typeof r.then === 'function') r.then(on); else on(r);
}
next(0);
