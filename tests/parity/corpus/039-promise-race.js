// Promise.race: timeout pattern and first-settled semantics
const wait = (ms, v) => new Promise(r => setTimeout(() => r(v), ms));
const timeout = (ms) => new Promise((_, rej) => setTimeout(() => rej(new Error(`timed out after ${ms}ms`)), ms));
async function fetchWithTimeout(workMs, limitMs) {
  try {
    const v = await Promise.race([wait(workMs, `result after ${workMs}ms`), timeout(limitMs)]);
    console.log('ok:', v);
  } catch (e) {
    console.log('err:', e.message);
  }
}
(async () => {
  await fetchWithTimeout(5, 40);
  await fetchWithTimeout(45, 10);
  console.log(await Promise.race([wait(20, 'slow'), 'immediate', wait(1, 'fast')]));
  const never = Promise.race([]);
  const state = await Promise.race([never.then(() => 'settled'), wait(5, 'still pending')]);
  console.log('race([]):', state);
})();
