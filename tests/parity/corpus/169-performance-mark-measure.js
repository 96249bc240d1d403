// performance.mark/measure and timing a workload; print only names, types and sanity checks
performance.mark('start');
let acc = 0;
for (let i = 0; i < 200000; i++) acc = (acc + i * i) % 1000003;
performance.mark('end');
const m = performance.measure('work', 'start', 'end');
console.log(m.name, m.entryType, typeof m.duration, m.duration >= 0, acc);
console.log(performance.getEntriesByName('start').length, performance.getEntriesByType('mark').map(e => e.name));
performance.clearMarks();
console.log(performance.getEntriesByType('mark').length);
const t = performance.now();
console.log(Number.isFinite(t) && t > 0, typeof performance.toJSON());
