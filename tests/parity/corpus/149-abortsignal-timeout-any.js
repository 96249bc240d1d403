// AbortSignal.timeout and AbortSignal.any cancelling a simulated async task
function task(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(() => resolve(`done after ${ms}ms`), ms);
    signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); }, { once: true });
  });
}
(async () => {
  console.log(await task(5, AbortSignal.timeout(40)));
  try { await task(45, AbortSignal.timeout(10)); } catch (e) { console.log('timeout:', e.name); }
  const user = new AbortController();
  const combined = AbortSignal.any([user.signal, AbortSignal.timeout(1000)]);
  setTimeout(() => user.abort('user cancelled'), 5);
  try { await task(40, combined); } catch (e) { console.log('any:', e, combined.aborted); }
  try { await task(1, AbortSignal.abort()); } catch (e) { console.log('pre-aborted:', e.name); }
})();
