// async/await: sequential vs parallel awaits and ordering of log lines
const sleep = (ms, v) => new Promise(r => setTimeout(() => r(v), ms));
async function step(name, ms) {
  console.log('start', name);
  const v = await sleep(ms, name.toUpperCase());
  console.log('end', name);
  return v;
}
async function main() {
  const a = await step('a', 10);
  const b = await step('b', 5);
  console.log('sequential:', a, b);
  const [c, d] = await Promise.all([step('c', 30), step('d', 5)]);
  console.log('parallel:', c, d);
  const val = await 42;
  console.log('await non-promise:', val);
  const thenable = { then(res) { res('from thenable'); } };
  console.log(await thenable);
  return 'main done';
}
main().then(console.log);
console.log('sync code after main()');
