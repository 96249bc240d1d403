// Large output: 120+ console.log calls of objects/arrays (Collatz sequence stats)
function collatz(n) { const seq = [n]; while (n !== 1) { n = n % 2 ? 3 * n + 1 : n / 2; seq.push(n); } return seq; }
let longest = { start: 0, steps: 0 };
for (let n = 1; n <= 120; n++) {
  const seq = collatz(n);
  if (seq.length - 1 > longest.steps) longest = { start: n, steps: seq.length - 1 };
  console.log({ n, steps: seq.length - 1, peak: Math.max(...seq), head: seq.slice(0, 4) });
}
console.log('longest:', longest);
console.log(collatz(27).length, collatz(97));
