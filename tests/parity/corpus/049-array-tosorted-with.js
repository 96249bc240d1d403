// ES2023 change-by-copy array methods: toSorted, toReversed, toSpliced, with
const scores = [88, 42, 97, 63, 75];
const sorted = scores.toSorted((a, b) => b - a);
console.log(sorted, scores);
console.log(scores.toReversed(), scores);
console.log(scores.toSpliced(1, 2, 'x', 'y', 'z'), scores);
console.log(scores.with(0, 100), scores.with(-1, 0), scores);
try { scores.with(10, 1); } catch (e) { console.log(e.name, e.message); }
console.log([, 1, , 2].toSorted(), [3, 1, 2].toSorted().toReversed());
const ta = new Uint8Array([5, 3, 9]);
console.log(ta.toSorted(), ta.toReversed(), ta.with(1, 255), ta);
