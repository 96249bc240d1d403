// console.log of the arguments object and array-likes
function f() { return arguments; }
console.log(f(1, 'two', { three: 3 }));
console.log(f());
console.log(Array.from(f('a', 'b')), Array.prototype.slice.call(f(1, 2, 3), 1));
console.log({ length: 2, 0: 'a', 1: 'b' });
const args = f(9);
console.log(typeof args, Array.isArray(args), args.length, Object.prototype.toString.call(args));
