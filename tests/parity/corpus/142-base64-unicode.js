// Unicode-safe base64 via TextEncoder + btoa, and decoding back via atob + TextDecoder
function toBase64(str) {
  const bytes = new TextEncoder().encode(str);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}
function fromBase64(b64) {
  const bin = atob(b64);
  return new TextDecoder().decode(Uint8Array.from(bin, c => c.charCodeAt(0)));
}
for (const s of ['plain', 'naïve ✓', '日本語テキスト', 'emoji 😀🎉']) {
  const enc = toBase64(s);
  console.log(enc.padEnd(40), fromBase64(enc) === s);
}
const jwtPayload = toBase64(JSON.stringify({ sub: '123', name: 'José' })).replace(/=+$/, '');
console.log(jwtPayload, JSON.parse(fromBase64(jwtPayload)).name);
