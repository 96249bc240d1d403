// Intl.DateTimeFormat en-US with timeZone UTC for a fixed timestamp: styles, options, parts
const d = new Date(Date.UTC(2024, 6, 4, 15, 30, 45));
const f = (opts) => new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', ...opts }).format(d);
console.log(f({}));
console.log(f({ dateStyle: 'full' }), '|', f({ dateStyle: 'medium', timeStyle: 'short' }));
console.log(f({ year: 'numeric', month: 'long', day: 'numeric' }));
console.log(f({ weekday: 'short', hour: '2-digit', minute: '2-digit', hour12: false }));
console.log(f({ month: '2-digit', day: '2-digit', year: '2-digit' }));
const parts = new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', year: 'numeric', month: 'short', day: '2-digit' }).formatToParts(d);
console.log(parts.filter(p => p.type !== 'literal').map(p => `${p.type}=${p.value}`).join(','));
console.log(d.toLocaleDateString('en-US', { timeZone: 'UTC' }), d.toLocaleTimeString('en-US', { timeZone: 'UTC' }));
console.log(new Intl.DateTimeFormat('en-US', { timeZone: 'UTC' }).resolvedOptions().timeZone);
