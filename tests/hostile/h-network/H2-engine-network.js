// why: the engine has no way out: wasm has no network API at all; node's sockets fail under network none (a sentinel listens on every host address)
// tiers: wasm runc runsc
// expect: ok
// has: ok no network
const targets = '{{SENTINEL}}'.split(' ').concat(['8.8.8.8:53', '169.254.169.254:80']);
if (typeof require !== 'function') {
  for (const g of ['fetch', 'XMLHttpRequest', 'WebSocket', 'require', 'os', 'std']) {
    if (typeof globalThis[g] !== 'undefined') console.log('BREACH global ' + g);
  }
  console.log('ok no network');
} else {
  const net = require('net');
  let left = targets.length;
  for (const t of targets) {
    const i = t.lastIndexOf(':');
    const s = net.connect({ host: t.slice(0, i), port: +t.slice(i + 1), timeout: 1000 });
    const done = (what) => { s.destroy(); if (what) console.log('BREACH tcp to ' + t); if (--left === 0) console.log('ok no network'); };
    s.on('connect', () => done(true));
    s.on('error', () => done(false));
    s.on('timeout', () => done(false));
  }
}
