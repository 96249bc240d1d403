// Recursion with memoization: fibonacci, factorial, and hanoi move count
const memo = new Map();
function fib(n) {
  if (n < 2) return n;
  if (memo.has(n)) return memo.get(n);
  const v = fib(n - 1) + fib(n - 2);
  memo.set(n, v);
  return v;
}
console.log([0, 1, 2, 10, 20, 50, 78].map(fib));
const fact = n => (n <= 1 ? 1 : n * fact(n - 1));
console.log(fact(10), fact(20), fact(25));
let moves = [];
function hanoi(n, from, to, via) {
  if (n === 0) return;
  hanoi(n - 1, from, via, to);
  moves.push(`${from}->${to}`);
  hanoi(n - 1, via, to, from);
}
hanoi(4, 'A', 'C', 'B');
console.log(moves.length, moves.slice(0, 5).join(' '));
