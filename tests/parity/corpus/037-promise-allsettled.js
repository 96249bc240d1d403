// Promise.allSettled: mixed fulfilled/rejected outcomes and summarizing them
const tasks = [
  Promise.resolve(1),
  Promise.reject(new TypeError('bad type')),
  new Promise(r => setTimeout(() => r('late'), 20)),
  Promise.reject('plain string reason'),
  42,
];
Promise.allSettled(tasks).then(results => {
  for (const r of results) {
    if (r.status === 'fulfilled') console.log('ok   ', r.value);
    else console.log('fail ', r.reason instanceof Error ? `${r.reason.name}: ${r.reason.message}` : r.reason);
  }
  const counts = results.reduce((acc, r) => ({ ...acc, [r.status]: (acc[r.status] || 0) + 1 }), {});
  console.log(counts);
  console.log(JSON.stringify(results.filter(r => r.status === 'fulfilled')));
});
