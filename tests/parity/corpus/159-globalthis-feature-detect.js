// globalThis feature detection of common web/server APIs (prints which are present)
const names = [
  'fetch', 'URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder', 'structuredClone', 'atob', 'btoa',
  'crypto', 'performance', 'AbortController', 'AbortSignal', 'EventTarget', 'Event', 'queueMicrotask',
  'setTimeout', 'setInterval', 'clearTimeout', 'Buffer', 'Intl', 'WeakRef', 'FinalizationRegistry',
  'SharedArrayBuffer', 'Atomics', 'WebAssembly', 'document', 'window', 'localStorage', 'alert',
];
for (const n of names) console.log(n.padEnd(22), typeof globalThis[n]);
console.log('globalThis self-ref:', globalThis.globalThis === globalThis);
const hasNodeProcess = typeof process !== 'undefined' && typeof process.versions === 'object';
console.log('process object:', hasNodeProcess);
