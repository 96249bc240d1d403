// Large output (300+ lines): multiplication table with a bar per line, printed line by line
for (let i = 1; i <= 20; i++) {
  for (let j = 1; j <= 15; j++) {
    const p = i * j;
    console.log(`${String(i).padStart(2)} x ${String(j).padStart(2)} = ${String(p).padStart(3)}  ${'#'.repeat(Math.floor(p / 10))}`);
  }
}
console.log('total lines printed:', 20 * 15);
