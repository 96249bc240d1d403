// Event loop ordering: sync code, promise microtasks, queueMicrotask, timers
console.log('1 sync start');
setTimeout(() => console.log('6 timeout 0'), 0);
Promise.resolve().then(() => console.log('3 promise then'));
queueMicrotask(() => console.log('4 queueMicrotask'));
Promise.resolve().then(() => {
  console.log('5 then (queues another microtask and a timer)');
  setTimeout(() => console.log('8 timeout from microtask'), 0);
  queueMicrotask(() => console.log('5b nested microtask'));
});
setTimeout(() => {
  console.log('7 second timeout 0');
  Promise.resolve().then(() => console.log('7b microtask inside timer'));
}, 0);
(async () => {
  console.log('2 async fn body runs sync');
  await null;
  console.log('4b after await');
})();
console.log('2b sync end');
