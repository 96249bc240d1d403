// Promise.any: first fulfilment wins; all rejections give an AggregateError
const after = (ms, v, ok = true) => new Promise((res, rej) => setTimeout(() => (ok ? res(v) : rej(new Error(v))), ms));
(async () => {
  const first = await Promise.any([after(30, 'mirror-a'), after(10, 'mirror-b'), after(1, 'broken', false)]);
  console.log('winner:', first);
  try {
    await Promise.any([after(5, 'e1', false), after(1, 'e2', false), Promise.reject(new RangeError('e3'))]);
  } catch (e) {
    console.log(e.constructor.name, e.name, JSON.stringify(e.message));
    console.log(e instanceof AggregateError, e.errors.length, e.errors.map(x => x.message));
  }
  try { await Promise.any([]); } catch (e) { console.log('empty ->', e.name, e.errors.length); }
})();
