// TextDecoder with non-UTF-8 labels: utf-16le, utf-16be, latin1 (windows-1252)
const le = new TextDecoder('utf-16le');
console.log(le.encoding, le.decode(new Uint8Array([0x48, 0x00, 0x69, 0x00, 0x3d, 0xd8, 0x00, 0xde])));
const be = new TextDecoder('utf-16be');
console.log(be.encoding, be.decode(new Uint8Array([0x00, 0x48, 0x00, 0x69])));
const latin = new TextDecoder('latin1');
console.log(latin.encoding, latin.decode(new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x20, 0x80, 0x99])));
console.log(new TextDecoder('UTF8').encoding, new TextDecoder(' unicode-1-1-utf-8 ').encoding);
try { new TextDecoder('no-such-encoding'); } catch (e) { console.log(e.name); }
const bom = new TextDecoder('utf-16le').decode(new Uint8Array([0xff, 0xfe, 0x41, 0x00]));
console.log(JSON.stringify(bom), bom.length);
