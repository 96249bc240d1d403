// Promise.withResolvers, Promise.try, and then/catch/finally chaining values
const { promise, resolve, reject } = Promise.withResolvers();
promise.then(v => console.log('resolved externally with', v));
Promise.resolve(1)
  .then(v => v + 1)
  .then(v => { throw new Error(`failed at ${v}`); })
  .then(() => console.log('skipped'))
  .catch(e => { console.log('caught', e.message); return 'recovered'; })
  .finally((...args) => console.log('finally args:', args.length))
  .then(v => console.log('after finally:', v));
Promise.try(() => { throw new RangeError('sync throw'); }).catch(e => console.log('Promise.try caught', e.name));
Promise.try((a, b) => a * b, 6, 7).then(v => console.log('Promise.try value', v));
const p = Promise.reject(new Error('handled later'));
// The external resolve is scheduled from the late catch's timer, so the two
// print in one order however long the lines above take (as two timers of 0
// and 5 ms did not, on a loaded machine).
setTimeout(() => {
  p.catch(e => console.log('late catch:', e.message));
  setTimeout(() => resolve('payload'), 5);
}, 0);
p.catch(() => {});
