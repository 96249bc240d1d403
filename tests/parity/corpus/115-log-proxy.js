// console.log of Proxy objects shows the target (no traps invoked)
const target = { a: 1, b: [1, 2] };
const p = new Proxy(target, { get: (t, k) => (k === 'a' ? 'intercepted' : t[k]) });
console.log(p);
console.log(p.a, p.b);
console.log(new Proxy([1, 2, 3], {}));
console.log(new Proxy(function fnTarget() {}, {}));
console.log(new Proxy(new Map([['k', 'v']]), {}));
const { proxy, revoke } = Proxy.revocable({ x: 1 }, {});
console.log(proxy);
revoke();
console.log(typeof proxy);
