// Error cause chains: new Error(msg, { cause }) and walking the chain
function readConfig() { throw new SyntaxError('Unexpected token } at 3:7'); }
function loadConfig() {
  try { readConfig(); } catch (err) { throw new Error('Failed to load config', { cause: err }); }
}
function start() {
  try { loadConfig(); } catch (err) { throw new Error('Startup aborted', { cause: err }); }
}
try { start(); } catch (err) {
  let e = err, depth = 0;
  while (e) {
    console.log(`${'  '.repeat(depth)}${e.name}: ${e.message}`);
    e = e.cause; depth++;
  }
}
const plain = new Error('x', { cause: { code: 'E_PLAIN', retry: false } });
console.log(plain.cause, 'cause' in new Error('no cause'), Object.hasOwn(plain, 'cause'));
const undef = new Error('y', { cause: undefined });
console.log('cause' in undef, undef.cause);
