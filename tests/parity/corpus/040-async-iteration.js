// Async generators and for await...of, including iterating an array of promises
async function* ticker(n, ms) {
  for (let i = 1; i <= n; i++) {
    await new Promise(r => setTimeout(r, ms));
    yield { tick: i };
  }
}
async function* paginate() {
  const pages = [[1, 2, 3], [4, 5], [6]];
  for (const [i, p] of pages.entries()) { await null; console.log(`  fetched page ${i}`); yield* p; }
}
(async () => {
  for await (const t of ticker(3, 5)) console.log('tick', t.tick);
  const all = [];
  for await (const item of paginate()) all.push(item);
  console.log('items', all);
  for await (const v of [Promise.resolve('p1'), 'plain', new Promise(r => setTimeout(() => r('p3'), 5))]) console.log(v);
  const it = ticker(5, 1);
  console.log(await it.next(), await it.return('stopped'), await it.next());
})();
