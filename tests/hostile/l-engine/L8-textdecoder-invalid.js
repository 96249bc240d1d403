// why: TextDecoder on megabytes of bytes that are never UTF-8, and on every kind of malformed sequence: replacement characters or a TypeError in fatal mode, never a crash or a read past the buffer
// tiers: wasm runc runsc
// pool: no
// expect: ok
// has: ok decoded 8388608 fffd TypeError
const junk = new Uint8Array(8 << 20).fill(0xff);
const s = new TextDecoder().decode(junk);
let fatal = 'none';
try { new TextDecoder('utf-8', { fatal: true }).decode(junk); } catch (e) { fatal = e.name; }
// Truncated, surrogate, overlong and past-U+10FFFF sequences, and a view into a detached window.
const mixed = new Uint8Array([0xf0, 0x9f, 0x98, 0xed, 0xa0, 0x80, 0xc0, 0xaf, 0xe0, 0x80, 0xbf, 0xf4, 0x90, 0x80, 0x80, 0x41]);
const streamed = new TextDecoder();
let out = '';
for (const b of mixed) out += streamed.decode(Uint8Array.of(b), { stream: true });
out += streamed.decode();
console.log('ok decoded', s.length, s.charCodeAt(0).toString(16), fatal, out === new TextDecoder().decode(mixed), JSON.stringify(out));
