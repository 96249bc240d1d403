// plimsoll's host API client for Node, baked into the sandbox images at
// /usr/local/lib/plimsoll/host.js. In a run that carries a grant, the daemon
// mounts a Unix socket at $HOST_API_SOCKET; every call goes through it to the
// run's broker, which holds the credential and allows only the grant's routes.
// The guest never sees the credential.
//
//   const host = require('/usr/local/lib/plimsoll/host.js');
//   const a = await host.get('/v1/items/1');   // {status, body, contentType, ok, json()}
//
// Preloaded (`node --require`) for granted snippets, which then see `host` as
// a global. Without a grant there is no socket and every call rejects.
'use strict';
const http = require('http');

function call(method, path, body) {
  return new Promise((resolve, reject) => {
    const socketPath = process.env.HOST_API_SOCKET;
    if (!socketPath) {
      reject(new Error('host: this run carries no grant (HOST_API_SOCKET is unset)'));
      return;
    }
    if (typeof method !== 'string' || typeof path !== 'string') {
      reject(new TypeError('host.call: the method and path must be strings'));
      return;
    }
    let payload = null;
    const headers = {};
    if (body !== undefined && body !== null) {
      if (typeof body === 'string' || Buffer.isBuffer(body)) {
        payload = Buffer.from(body);
      } else {
        payload = Buffer.from(JSON.stringify(body));
        headers['content-type'] = 'application/json';
      }
      headers['content-length'] = String(payload.length);
    }
    const req = http.request({ socketPath, method: method.toUpperCase(), path, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode,
          ok: res.statusCode >= 200 && res.statusCode < 300,
          body: text,
          contentType: res.headers['content-type'] || '',
          json() { return JSON.parse(text); },
        });
      });
    });
    req.on('error', reject);
    if (payload !== null) req.write(payload);
    req.end();
  });
}

const host = Object.freeze({
  call,
  get: (path) => call('GET', path),
  post: (path, body) => call('POST', path, body),
  put: (path, body) => call('PUT', path, body),
  patch: (path, body) => call('PATCH', path, body),
  del: (path) => call('DELETE', path),
});

module.exports = host;
// Preloaded into a granted snippet: `host` is a global.
if (process.env.HOST_API_SOCKET) {
  Object.defineProperty(globalThis, 'host', { value: host, writable: false, configurable: false, enumerable: false });
}
