// console.log of arrays of strings: short (one line), medium (grouped columns), and long
console.log(['apple', 'banana', 'cherry']);
console.log(['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa']);
console.log('abcdefghijklmnopqrstuvwxyz'.split(''));
console.log(['a much longer string element number one', 'a much longer string element number two', 'three']);
console.log(Array.from({ length: 12 }, (_, i) => `item-${i}`));
console.log(['x'.repeat(20), 'y'.repeat(20), 'z'.repeat(20), 'w'.repeat(20)]);
