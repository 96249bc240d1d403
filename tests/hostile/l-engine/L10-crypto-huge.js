// why: crypto on huge input: a 64 MiB digest and HMAC finish, getRandomValues past 65,536 bytes is a QuotaExceededError, never a crash or a hang
// tiers: wasm runc runsc
// pool: no
// expect: ok
// has: ok crypto 32 QuotaExceededError 64
// timeout_ms: 20000
(async () => {
  const big = new Uint8Array(64 << 20);
  const d = await crypto.subtle.digest('SHA-256', big);
  let quota = 'none';
  try { crypto.getRandomValues(new Uint8Array(1 << 24)); } catch (e) { quota = e.name; }
  const key = await crypto.subtle.importKey('raw', new Uint8Array(1 << 20), { name: 'HMAC', hash: 'SHA-512' }, false, ['sign']);
  const sig = await crypto.subtle.sign('HMAC', key, big);
  console.log('ok crypto', d.byteLength, quota, sig.byteLength);
})();
