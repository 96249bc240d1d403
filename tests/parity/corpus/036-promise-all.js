// Promise.all: result ordering, fail-fast rejection, empty input, non-promise values
const delay = (ms, v, fail) => new Promise((res, rej) => setTimeout(() => (fail ? rej(new Error(v)) : res(v)), ms));
(async () => {
  const r = await Promise.all([delay(30, 'slow'), delay(5, 'fast'), 'plain', Promise.resolve(4)]);
  console.log('all:', r);
  try {
    await Promise.all([delay(20, 'ok'), delay(5, 'bad one', true), delay(10, 'also bad', true)]);
  } catch (e) {
    console.log('rejected with:', e.message);
  }
  console.log('empty:', await Promise.all([]));
  const ids = [3, 1, 2];
  const users = await Promise.all(ids.map(async id => { await delay(id * 5); return { id, name: 'user' + id }; }));
  console.log(users.map(u => u.name).join(','));
})();
