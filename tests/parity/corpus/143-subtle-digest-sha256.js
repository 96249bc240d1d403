// crypto.subtle.digest SHA-256 of strings, printed as lowercase hex
const hex = buf => Array.from(new Uint8Array(buf), b => b.toString(16).padStart(2, '0')).join('');
async function sha256(text) {
  const data = new TextEncoder().encode(text);
  return hex(await crypto.subtle.digest('SHA-256', data));
}
(async () => {
  for (const s of ['', 'abc', 'hello world', 'The quick brown fox jumps over the lazy dog', '日本']) {
    console.log(JSON.stringify(s).padEnd(46), await sha256(s));
  }
  const digest = await crypto.subtle.digest('SHA-256', new Uint8Array(0));
  console.log(digest instanceof ArrayBuffer, digest.byteLength);
})();
