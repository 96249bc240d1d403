// crypto.subtle HMAC-SHA256: importKey + sign + verify with a fixed key (deterministic hex)
const enc = new TextEncoder();
const hex = buf => [...new Uint8Array(buf)].map(b => b.toString(16).padStart(2, '0')).join('');
(async () => {
  const key = await crypto.subtle.importKey('raw', enc.encode('key'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  console.log(key.type, key.algorithm.name, key.algorithm.hash.name, key.extractable, key.usages);
  const sig = await crypto.subtle.sign('HMAC', key, enc.encode('The quick brown fox jumps over the lazy dog'));
  console.log(sig.byteLength, hex(sig));
  console.log(await crypto.subtle.verify('HMAC', key, sig, enc.encode('The quick brown fox jumps over the lazy dog')));
  console.log(await crypto.subtle.verify('HMAC', key, sig, enc.encode('tampered')));
  try { await crypto.subtle.exportKey('raw', key); } catch (e) { console.log('export non-extractable:', e.name); }
})();
