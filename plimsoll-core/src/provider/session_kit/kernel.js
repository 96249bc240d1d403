// plimsoll's JavaScript cell kernel: one request per line on stdin
// ({"nonce", "code"} as JSON); one answer per cell on stdout,
// "<nonce> <json>\n". Guest writes to process.stdout/stderr (and console) are
// captured per cell; a line a guest forges on fd 1 lacks the host's fresh nonce.
'use strict';
const fs = require('fs');
const vm = require('vm');
const util = require('util');
const CAP = 65536;
// fd 1 is a pipe that node has made non-blocking: an answer larger than the
// pipe's buffer meets EAGAIN while the host reads, so wait a moment and go on.
const nap = new Int32Array(new SharedArrayBuffer(4));
const send = (s) => {
  const b = Buffer.from(s); let o = 0;
  while (o < b.length) {
    try { o += fs.writeSync(1, b, o); } catch (e) { if (e.code !== 'EAGAIN') throw e; Atomics.wait(nap, 0, 0, 2); }
  }
};
let out = [], err = [], outN = 0, errN = 0, outT = false, errT = false;
const cap = (which) => (chunk, enc, cb) => {
  const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk), typeof enc === 'string' ? enc : 'utf8');
  if (which === 1) { const room = CAP - outN; if (b.length > room) outT = true; const k = b.subarray(0, Math.max(0, room)); out.push(k); outN += k.length; }
  else { const room = CAP - errN; if (b.length > room) errT = true; const k = b.subarray(0, Math.max(0, room)); err.push(k); errN += k.length; }
  const done = typeof enc === 'function' ? enc : cb; if (typeof done === 'function') done();
  return true;
};
process.stdout.write = cap(1);
process.stderr.write = cap(2);
const stdin = process.stdin;
let pending = Buffer.alloc(0);
const queue = [];
let busy = false;
async function runOne(req) {
  out = []; err = []; outN = 0; errN = 0; outT = false; errT = false;
  let code = 0;
  try {
    let v = vm.runInThisContext(req.code, { filename: '<cell>' });
    if (v && typeof v.then === 'function') v = await v;
    if (v !== undefined) process.stdout.write(util.inspect(v) + '\n');
  } catch (e) {
    code = 1;
    process.stderr.write((e && e.stack ? e.stack : String(e)) + '\n');
  }
  const ans = { exit_code: code, stdout: Buffer.concat(out).toString('base64'), stderr: Buffer.concat(err).toString('base64'), stdout_truncated: outT, stderr_truncated: errT };
  send(req.nonce + ' ' + JSON.stringify(ans) + '\n');
}
async function drain() {
  if (busy) return; busy = true;
  while (queue.length) { await runOne(queue.shift()); }
  busy = false;
}
stdin.on('data', (d) => {
  pending = Buffer.concat([pending, d]);
  let i;
  while ((i = pending.indexOf(10)) >= 0) {
    const line = pending.subarray(0, i).toString('utf8'); pending = pending.subarray(i + 1);
    try { queue.push(JSON.parse(line)); } catch (e) { }
  }
  drain();
});
stdin.on('end', () => process.exit(0));
process.on('uncaughtException', (e) => { try { process.stderr.write(String(e && e.stack || e) + '\n'); } catch (_) { } });
process.on('unhandledRejection', () => { });
send('READY ' + process.pid + '\n');
