// TextEncoder: UTF-8 encoding of ASCII, accented chars, CJK, emoji, lone surrogates
const enc = new TextEncoder();
console.log(enc.encoding);
for (const s of ['hi', 'é', '€', '日本', '😀', '\ud800', '']) {
  const bytes = enc.encode(s);
  console.log(JSON.stringify(s), bytes.length, Array.from(bytes, b => b.toString(16).padStart(2, '0')).join(' '));
}
const encoded = enc.encode('hello world');
console.log(encoded instanceof Uint8Array, encoded.constructor.name, encoded.byteLength);
console.log(enc.encode('abc'));
