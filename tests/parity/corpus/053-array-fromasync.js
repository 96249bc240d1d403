// Array.fromAsync over async generators, arrays of promises, and with a mapper
async function* gen() { for (let i = 1; i <= 4; i++) { await new Promise(r => setTimeout(r, 2)); yield i; } }
(async () => {
  console.log(await Array.fromAsync(gen()));
  console.log(await Array.fromAsync([Promise.resolve('a'), 'b', Promise.resolve('c')]));
  console.log(await Array.fromAsync(gen(), async x => x * 10));
  console.log(await Array.fromAsync({ length: 3, 0: 'x', 1: Promise.resolve('y'), 2: 'z' }));
  try { await Array.fromAsync([Promise.reject(new Error('nope'))]); }
  catch (e) { console.log('rejected:', e.message); }
})();
