// Length-prefixed binary framing with Buffer: encode JSON messages, then split a stream
function encode(msg) {
  const body = Buffer.from(JSON.stringify(msg), 'utf8');
  const header = Buffer.alloc(4);
  header.writeUInt32BE(body.length);
  return Buffer.concat([header, body]);
}
function* decode(stream) {
  let off = 0;
  while (off + 4 <= stream.length) {
    const len = stream.readUInt32BE(off);
    if (off + 4 + len > stream.length) break;
    yield JSON.parse(stream.subarray(off + 4, off + 4 + len).toString('utf8'));
    off += 4 + len;
  }
}
const msgs = [{ op: 'hello', v: 1 }, { op: 'data', payload: 'héllo ✓' }, { op: 'bye' }];
const stream = Buffer.concat(msgs.map(encode));
console.log(stream.length, stream.subarray(0, 12));
console.log(stream.toString('base64'));
for (const m of decode(stream)) console.log(m);
console.log([...decode(stream.subarray(0, stream.length - 3))].length, 'complete frames in truncated stream');
