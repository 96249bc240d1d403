// WeakMap/WeakSet for private metadata, and invalid-key errors
const meta = new WeakMap();
const visited = new WeakSet();
class Node { constructor(v) { this.v = v; meta.set(this, { created: this.v * 10 }); } }
const n1 = new Node(1), n2 = new Node(2);
visited.add(n1);
console.log(meta.get(n1).created, meta.get(n2).created, meta.has({}), visited.has(n1), visited.has(n2));
meta.delete(n1);
console.log(meta.has(n1), meta.get(n1));
try { meta.set('str', 1); } catch (e) { console.log(e.name); }
try { new WeakSet([1]); } catch (e) { console.log(e.name); }
const sym = Symbol('local');
const wm = new WeakMap([[sym, 'symbol keys allowed']]);
console.log(wm.get(sym));
try { new WeakMap().set(Symbol.for('registered'), 1); } catch (e) { console.log('registered symbol:', e.name); }
const ref = new WeakRef(n2);
console.log(ref.deref() === n2, typeof FinalizationRegistry);
