// Retry loop with backoff that a caller cancels through an AbortController
const sleep = (ms, signal) => new Promise((res, rej) => {
  const t = setTimeout(res, ms);
  signal?.addEventListener('abort', () => { clearTimeout(t); rej(signal.reason); }, { once: true });
});
async function retry(fn, { tries, signal }) {
  for (let attempt = 1; ; attempt++) {
    signal.throwIfAborted();
    try { return await fn(attempt); }
    catch (e) {
      console.log(`attempt ${attempt} failed: ${e.message}`);
      if (attempt >= tries) throw new Error(`gave up after ${attempt}`, { cause: e });
      await sleep(attempt * 5, signal);
    }
  }
}
(async () => {
  const ok = await retry(async n => { if (n < 3) throw new Error('flaky'); return 'success on ' + n; }, { tries: 5, signal: new AbortController().signal });
  console.log(ok);
  try { await retry(async () => { throw new Error('down'); }, { tries: 2, signal: new AbortController().signal }); }
  catch (e) { console.log(e.message, '<-', e.cause.message); }
  // Cancelled during the second backoff: the abort's timer is due first and
  // set first, so the order holds however late the timers run.
  const ac = new AbortController();
  const down = async n => {
    if (n === 2) setTimeout(() => ac.abort(new Error('user pressed cancel')), 1);
    throw new Error('still down');
  };
  try { await retry(down, { tries: 10, signal: ac.signal }); }
  catch (e) { console.log('aborted:', e.message); }
})();
