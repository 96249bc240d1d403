// why: the host import is fed hostile arguments (a 1 MiB path, a 2 MiB body, non-strings, throwing toString, getters): every call returns a clean status or a JS error, never a host fault
// tiers: wasm runc runsc
// grant: items
// expect: ok
// has: ok host survived
const evil = { toString() { throw new Error('nope'); } };
const calls = [
  () => host.call('GET', '/v1/items/' + 'a'.repeat(1 << 20)),
  () => host.post('/v1/items', 'b'.repeat(2 << 20)),
  () => host.call(42, {}),
  () => host.call(evil, evil),
  () => host.call('GET\r\nX: y', '/v1/items/1'),
  () => host.call('GET', '/v1/items/1\r\nAuthorization: x'),
  () => host.call('GET', '/v1/items/\u0000'),
];
const seen = [];
function next(i) {
  if (i === calls.length) { console.log(seen.join(' ')); console.log('ok host survived'); return; }
  let r;
  try { r = calls[i](); } catch (e) { seen.push('threw'); return next(i + 1); }
  const on = (a) => { seen.push(a.status); next(i + 1); };
  if (r && typeof r.then === 'function') r.then(on, () => { seen.push('rejected'); next(i + 1); }); else on(r);
}
next(0);
