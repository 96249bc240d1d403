// console.log of Promise objects in pending, fulfilled and rejected states
const fulfilled = Promise.resolve(42);
const pending = new Promise(() => {});
const rejected = Promise.reject('reason string');
rejected.catch(() => {});
const withObj = Promise.resolve({ a: [1, 2] });
console.log(fulfilled);
console.log(pending);
console.log(rejected);
console.log(withObj);
console.log([fulfilled, pending]);
const later = new Promise(r => setTimeout(() => r('done'), 5));
console.log('before:', later);
later.then(() => console.log('after:', later));
(async () => 'async result')().then(() => {});
console.log((async () => 'async result')());
