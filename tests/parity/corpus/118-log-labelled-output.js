// Labelled key: value output lines using padEnd alignment and console.log label args
const metrics = { requests: 12873, errors: 17, p50: 12.5, p99: 210.75, uptime: '3d 4h', healthy: true };
const width = Math.max(...Object.keys(metrics).map(k => k.length));
for (const [k, v] of Object.entries(metrics)) console.log(`${k.padEnd(width)} : ${v}`);
console.log('errors rate:', ((metrics.errors / metrics.requests) * 100).toFixed(3) + '%');
console.log('[INFO]', 'server', { port: 8080 });
console.log('[WARN]', 'slow query', 210.75, 'ms');
console.log('result:', [metrics.p50, metrics.p99]);
console.log('==>', 'done', '<==');
