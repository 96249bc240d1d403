// Labelled break/continue in nested loops, plus switch fallthrough
const grid = [
  [1, 2, 3, 4],
  [5, -1, 7, 8],
  [9, 10, 11, 12],
];
outer: for (let r = 0; r < grid.length; r++) {
  for (let c = 0; c < grid[r].length; c++) {
    if (grid[r][c] < 0) { console.log(`negative at ${r},${c}; stopping`); break outer; }
    console.log('visit', r, c, grid[r][c]);
  }
}
rows: for (const row of grid) {
  for (const v of row) if (v % 2 === 0) continue rows; else console.log('first odd in row:', v);
}
block: { console.log('in block'); if (grid.length) break block; console.log('unreachable'); }
for (const day of [0, 3, 5, 6, 9]) {
  switch (day) {
    case 0: case 6: console.log(day, 'weekend'); break;
    case 5: console.log(day, 'friday!');
    // fallthrough
    case 1: case 2: case 3: case 4: console.log(day, 'weekday'); break;
    default: console.log(day, 'invalid');
  }
}
