// crypto.subtle.digest with SHA-1, SHA-384, SHA-512 and an unsupported algorithm
const toHex = ab => [...new Uint8Array(ab)].map(b => b.toString(16).padStart(2, '0')).join('');
(async () => {
  const data = new TextEncoder().encode('parity');
  for (const alg of ['SHA-1', 'SHA-256', 'SHA-384', 'SHA-512', { name: 'sha-256' }]) {
    const d = await crypto.subtle.digest(alg, data);
    console.log(JSON.stringify(alg), d.byteLength, toHex(d));
  }
  try { await crypto.subtle.digest('MD5', data); } catch (e) { console.log('MD5 ->', e.name); }
  const fromBuffer = await crypto.subtle.digest('SHA-256', data.buffer);
  const fromView = await crypto.subtle.digest('SHA-256', new DataView(data.buffer));
  console.log(toHex(fromBuffer) === toHex(fromView));
})();
