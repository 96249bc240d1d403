// console.log of circular references: <ref *1> and [Circular *1] markers
const a = { name: 'a' };
a.self = a;
console.log(a);
const parent = { name: 'parent', children: [] };
const child = { name: 'child', parent };
parent.children.push(child);
console.log(parent);
const arr = [1, 2];
arr.push(arr);
console.log(arr);
const m = new Map();
m.set('me', m);
console.log(m);
const x = { y: {} }; x.y.x = x; x.y.y = x.y;
console.log(x);
try { JSON.stringify(a); } catch (e) { console.log(e.name); }
