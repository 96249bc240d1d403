// Proxy traps (get/set/has/deleteProperty/ownKeys) and Reflect API
const log = [];
const target = { a: 1, b: 2, _secret: 'x' };
const p = new Proxy(target, {
  get(t, k, r) { log.push(`get ${String(k)}`); return k in t ? Reflect.get(t, k, r) : `<no ${String(k)}>`; },
  set(t, k, v) { if (typeof v !== 'number') throw new TypeError(`${k} must be number`); return Reflect.set(t, k, v * 2); },
  has(t, k) { return !k.startsWith('_') && k in t; },
  deleteProperty(t, k) { log.push(`delete ${k}`); return Reflect.deleteProperty(t, k); },
  ownKeys(t) { return Reflect.ownKeys(t).filter(k => !k.startsWith('_')); },
});
console.log(p.a, p.zzz);
p.c = 5;
console.log(target.c, 'a' in p, '_secret' in p, Object.keys(p));
try { p.d = 'str'; } catch (e) { console.log(e.name, e.message); }
delete p.b;
console.log(log.join('; '));
console.log(Reflect.ownKeys({ [Symbol('s')]: 1, z: 1, 2: 1, 1: 1 }).map(String));
console.log(Reflect.apply(Math.max, null, [1, 5, 3]), Reflect.has({ x: 1 }, 'x'), Reflect.construct(Date, [0]).getTime());
const revocable = Proxy.revocable({}, {});
revocable.revoke();
try { revocable.proxy.x; } catch (e) { console.log('revoked:', e.name); }
