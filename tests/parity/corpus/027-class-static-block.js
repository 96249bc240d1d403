// Class static initialization blocks, static fields and static inheritance
class Registry {
  static items = new Map();
  static order = [];
  static {
    for (const name of ['alpha', 'beta', 'gamma']) {
      this.items.set(name, name.length);
      this.order.push(name);
    }
    console.log('static block ran, size', this.items.size);
  }
  static lookup(k) { return this.items.get(k) ?? -1; }
}
class Sub extends Registry {
  static extra = 'x';
  static { console.log('Sub static block; inherited lookup:', this.lookup('beta')); }
}
console.log(Registry.order.join('|'), Registry.lookup('gamma'), Registry.lookup('zeta'));
console.log(Sub.extra, Sub.items === Registry.items, Object.hasOwn(Sub, 'items'));
