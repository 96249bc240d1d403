// Getters/setters in classes and object literals, validation, defineProperty
class Temperature {
  #c = 0;
  get celsius() { return this.#c; }
  set celsius(v) { if (typeof v !== 'number') throw new TypeError('not a number'); this.#c = v; }
  get fahrenheit() { return this.#c * 9 / 5 + 32; }
  set fahrenheit(f) { this.#c = (f - 32) * 5 / 9; }
}
const t = new Temperature();
t.celsius = 100;
console.log(t.celsius, t.fahrenheit);
t.fahrenheit = 212 - 180;
console.log(t.celsius, t.fahrenheit);
try { t.celsius = 'hot'; } catch (e) { console.log(e.name, e.message); }
const o = { _v: 1, get v() { return this._v * 10; }, set v(x) { this._v = x; } };
o.v = 7;
console.log(o.v, Object.getOwnPropertyDescriptor(o, 'v').get !== undefined);
const ro = {};
Object.defineProperty(ro, 'id', { value: 42, enumerable: false });
ro.id = 1;
console.log(ro.id, Object.keys(ro), JSON.stringify(ro));
console.log(Object.getOwnPropertyNames(Temperature.prototype));
