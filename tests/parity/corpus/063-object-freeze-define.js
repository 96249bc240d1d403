// Object.freeze/seal/preventExtensions in sloppy and strict mode; property descriptors
const frozen = Object.freeze({ a: 1, nested: { b: 2 } });
frozen.a = 99; frozen.c = 3; frozen.nested.b = 42;
console.log(frozen.a, frozen.c, frozen.nested.b, Object.isFrozen(frozen), Object.isFrozen(frozen.nested));
(function () {
  'use strict';
  try { frozen.a = 2; } catch (e) { console.log('strict:', e.name); }
  const sealed = Object.seal({ x: 1 });
  sealed.x = 2;
  try { delete sealed.x; } catch (e) { console.log('strict delete:', e.name); }
  console.log(sealed.x, Object.isSealed(sealed));
})();
const o = {};
Object.defineProperties(o, {
  visible: { value: 1, enumerable: true },
  hidden: { value: 2, enumerable: false },
  computed: { get() { return this.visible + this.hidden; }, enumerable: true },
});
console.log(Object.keys(o), o.computed, JSON.stringify(o));
console.log(JSON.stringify(Object.getOwnPropertyDescriptor(o, 'hidden')));
console.log(Object.entries(Object.getOwnPropertyDescriptors({ get g() { return 1; } })).map(([k, d]) => [k, Object.keys(d)]).flat(2));
