// console.log of subclass instances of builtins (Array, Map, Set, Uint8Array) and Symbol.toStringTag
class Stack extends Array {}
const st = Stack.of(1, 2, 3);
console.log(st);
class Registry extends Map {}
console.log(new Registry([['a', 1]]));
class Bag extends Set { constructor(it) { super(it); this.label = 'bag'; } }
console.log(new Bag([1, 2]));
class Tagged { get [Symbol.toStringTag]() { return 'Custom'; } constructor() { this.v = 1; } }
console.log(new Tagged());
const plainTagged = { [Symbol.toStringTag]: 'PlainTag', x: 1 };
console.log(plainTagged);
class Bytes extends Uint8Array {}
console.log(new Bytes([1, 2]));
class Named { static name = 'Renamed'; }
console.log(new Named());
