// console.log depth cutoff inside Maps, Sets and class instances
class Wrapper { constructor(inner) { this.inner = inner; } }
console.log(new Wrapper(new Wrapper(new Wrapper(new Wrapper('core')))));
console.log(new Map([['l1', new Map([['l2', new Map([['l3', new Map([['l4', 1]])]])]])]]));
console.log([new Set([[new Set([{ deep: { deeper: 1 } }])]])]);
console.log({ a: { b: { c: new Map([['d', 1]]) } } });
console.log({ a: { b: { c: [] } } }, { a: { b: { c: {} } } });
