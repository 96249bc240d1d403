// Classes with private fields, private methods, #x in obj brand checks
class Account {
  #balance = 0;
  #history = [];
  static #count = 0;
  constructor(owner) { this.owner = owner; Account.#count++; }
  #log(kind, amt) { this.#history.push(`${kind}:${amt}`); }
  deposit(n) { if (n <= 0) throw new RangeError('amount must be positive'); this.#balance += n; this.#log('dep', n); return this; }
  withdraw(n) { if (n > this.#balance) throw new Error('insufficient funds'); this.#balance -= n; this.#log('wd', n); return this; }
  get balance() { return this.#balance; }
  get history() { return [...this.#history]; }
  static isAccount(o) { return #balance in o; }
  static get count() { return Account.#count; }
}
const a = new Account('lee').deposit(100).withdraw(30).deposit(5);
console.log(a.owner, a.balance, a.history.join(','));
try { a.withdraw(1000); } catch (e) { console.log(e.name, e.message); }
try { a.deposit(-1); } catch (e) { console.log(e.name, e.message); }
new Account('kai');
console.log(Account.count, Account.isAccount(a), Account.isAccount({}));
console.log(Object.keys(a), JSON.stringify(a));
