// TextDecoder: utf-8 decoding, BOM handling, invalid sequences, fatal mode, streaming
const dec = new TextDecoder();
console.log(dec.encoding, dec.fatal, dec.ignoreBOM);
console.log(dec.decode(new Uint8Array([0x68, 0x65, 0x6c, 0x6c, 0x6f])));
console.log(dec.decode(new Uint8Array([0xe6, 0x97, 0xa5, 0xe6, 0x9c, 0xac])));
console.log(JSON.stringify(dec.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41]))));
console.log(JSON.stringify(dec.decode(new Uint8Array([0x41, 0xff, 0x42, 0xc3]))));
try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xff])); } catch (e) { console.log(e.name); }
const stream = new TextDecoder();
const euro = [0xe2, 0x82, 0xac];
let out = stream.decode(new Uint8Array(euro.slice(0, 1)), { stream: true });
out += stream.decode(new Uint8Array(euro.slice(1)), { stream: true });
out += stream.decode();
console.log(out, out.length);
console.log(dec.decode(new Uint8Array([0x61, 0x62]).buffer), JSON.stringify(dec.decode()));
