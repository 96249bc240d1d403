// Symbol.toPrimitive, valueOf/toString coercion order, and well-known symbols
class Money {
  constructor(cents, cur) { this.cents = cents; this.cur = cur; }
  [Symbol.toPrimitive](hint) {
    if (hint === 'number') return this.cents / 100;
    if (hint === 'string') return `${(this.cents / 100).toFixed(2)} ${this.cur}`;
    return `${this.cur}${this.cents}`;
  }
}
const m = new Money(1999, 'USD');
console.log(+m, `${m}`, m + '', m * 2, String(m), [m] + '');
const calls = [];
const o = { valueOf() { calls.push('valueOf'); return 5; }, toString() { calls.push('toString'); return 'five'; } };
console.log(o + 1, `${o}`, o * 2, calls.join(','));
class Evens { *[Symbol.iterator]() { for (let i = 0; i < 10; i += 2) yield i; } }
console.log([...new Evens()]);
class Tagged { get [Symbol.toStringTag]() { return 'Tagged!'; } }
console.log(Object.prototype.toString.call(new Tagged()), Object.prototype.toString.call(null));
const Even = { [Symbol.hasInstance]: n => n % 2 === 0 };
console.log(4 instanceof Even, 3 instanceof Even);
