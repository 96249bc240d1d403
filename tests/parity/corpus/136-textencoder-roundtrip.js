// TextEncoder.encodeInto with a fixed buffer and TextEncoder/TextDecoder round trip
const enc = new TextEncoder();
const buf = new Uint8Array(8);
console.log(enc.encodeInto('héllo', buf), buf);
const small = new Uint8Array(4);
console.log(enc.encodeInto('a😀b', small), small);
const samples = ['plain ascii', 'Grüße, Jürgen', 'Привет', '🏳️‍🌈 flag', 'mixed 日本 ✓'];
const dec = new TextDecoder();
for (const s of samples) console.log(dec.decode(enc.encode(s)) === s, enc.encode(s).length, s.length);
