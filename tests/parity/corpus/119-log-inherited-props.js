// console.log shows only own enumerable properties, not inherited ones
const proto = { inherited: 'from proto', greet() { return 'hi'; } };
const child = Object.create(proto);
child.own = 'mine';
console.log(child);
console.log(child.inherited, child.greet(), 'inherited' in child, Object.hasOwn(child, 'inherited'));
for (const k in child) console.log('for-in key:', k);
console.log(Object.keys(child), Object.entries(child));
function Legacy(name) { this.name = name; }
Legacy.prototype.hello = function () { return 'hello ' + this.name; };
console.log(new Legacy('old-style'), new Legacy('x').hello());
