// try/catch/finally with built-in error types; printing name and message only
const attempts = [
  () => null.prop,
  () => undefinedVariable + 1,
  () => new Array(-1),
  () => JSON.parse('{'),
  () => (1).toFixed(200),
  () => decodeURIComponent('%'),
  () => { throw new Error('custom message'); },
  () => { throw 'a string'; },
  () => { throw { code: 42 }; },
  () => BigInt(1.5),
  () => Symbol() + '',
];
for (const f of attempts) {
  try { f(); console.log('no error'); }
  catch (e) {
    if (e instanceof Error) console.log(`${e.name}: ${e.constructor === Error ? e.message : '(engine message, ' + typeof e.message + ')'}`);
    else console.log('non-error thrown:', typeof e, JSON.stringify(e));
  } finally { /* nothing */ }
}
function f() { try { return 'try'; } finally { console.log('finally runs before return'); } }
console.log(f());
