// why: the URL parser fed hostile input (megabyte hosts, endless dot segments, broken IPv6 and IPv4, IDNA junk, lone surrogates, control characters) parses or throws a TypeError, and URLSearchParams takes malformed escapes, never a crash or a hang
// tiers: wasm runc runsc
// pool: no
// expect: ok
// has: ok url true
const inputs = [
  'http://' + 'a'.repeat(1 << 20) + '.test/', 'http://' + 'a.'.repeat(200000) + 'test', 'http://x/' + '../'.repeat(100000) + 'y',
  'http://[::1', 'http://[' + ':'.repeat(10000) + ']/', 'http://%zz%00/', 'http://xn--' + 'a'.repeat(5000) + '/',
  'http://\u0000\ud800x/', 'javascript:alert(1)', 'http://' + 'ü'.repeat(100000) + '/', 'file:' + '/'.repeat(100000),
  'http://1.2.3.4.5/', 'http://0x7fffffff/', 'http://4294967296/', '\u{10FFFF}://x', ' \t\n http://trim.test \n',
  'http://x/?' + '%'.repeat(100000), 'http://user:' + ':'.repeat(100000) + '@x/',
];
let parsed = 0;
let refused = 0;
for (const s of inputs) {
  try { new URL(s); parsed++; } catch (e) { if (!(e instanceof TypeError)) throw e; refused++; }
}
const q = new URLSearchParams('a=%'.repeat(100000) + '&' + '%ff'.repeat(100000));
console.log('ok url', parsed + refused === inputs.length, q.size, q.toString().length > 0);
