// Matrix multiply, transpose, determinant, and pretty printing with alignment
const A = [[1, 2, 3], [4, 5, 6]];
const B = [[7, 8], [9, 10], [11, 12]];
const mul = (X, Y) => X.map(r => Y[0].map((_, j) => r.reduce((s, v, k) => s + v * Y[k][j], 0)));
const T = M => M[0].map((_, j) => M.map(r => r[j]));
function det(M) {
  if (M.length === 1) return M[0][0];
  return M[0].reduce((s, v, j) => s + (j % 2 ? -1 : 1) * v * det(M.slice(1).map(r => r.filter((_, k) => k !== j))), 0);
}
const fmt = M => M.map(r => r.map(v => String(v).padStart(5)).join('')).join('\n');
console.log(fmt(mul(A, B)));
console.log(fmt(T(A)));
console.log(det([[2, 0, 1], [1, 3, 2], [1, 1, 1]]), det([[1, 2], [2, 4]]), det([[4]]));
const I = n => Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => +(i === j)));
console.log(I(3));
console.log(JSON.stringify(mul(I(2), [[5, 6], [7, 8]])));
