// performance.now is monotonic and numeric; print only types and comparisons
const t0 = performance.now();
let x = 0;
for (let i = 0; i < 100000; i++) x += i;
const t1 = performance.now();
console.log(typeof t0, t1 >= t0, Number.isFinite(t1), x);
setTimeout(() => {
  const t2 = performance.now();
  console.log('elapsed >= 10ms:', t2 - t1 >= 10);
  console.log('elapsed < 10s:', t2 - t1 < 10000);
}, 20);
console.log(typeof performance.timeOrigin, performance.timeOrigin > 0);
console.log(typeof performance.mark, typeof Date.now(), Date.now() > 1.6e12);
