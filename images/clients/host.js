// plimsoll's host API client for Node, baked into the sandbox images at
// /usr/local/lib/plimsoll/host.js. In a run that carries a grant, every call
// goes to the run's broker, which holds the credential and allows only the
// grant's routes. The guest never sees the credential. Two ways there:
//
//   - docker: the daemon mounts a Unix socket at $HOST_API_SOCKET;
//   - a VM that runs elsewhere (e2b): $HOST_API_URL, https://<guard host><guard
//     path>, the only host the VM may reach; the vendor's egress proxy adds
//     the run's guard credential outside the VM. Trust comes from the OS
//     bundle (NODE_EXTRA_CA_CERTS), which holds the egress proxy's CA.
//     On Docker Cloud the guest holds its own guard credential,
//     $HOST_API_TOKEN (it reaches only this run's broker), sent as a bearer.
//   - openshell: a relay in the sandbox listens on $HOST_API_SOCKET, and the
//     daemon dials into it through the gateway; the sandbox has no way out.
//
//   const host = require('/usr/local/lib/plimsoll/host.js');
//   const a = await host.get('/v1/items/1');   // {status, body, contentType, ok, json()}
//
// Preloaded (`node --require`) for granted snippets, which then see `host` as
// a global. Without a grant there is no socket and every call rejects.
'use strict';
const http = require('http');
const https = require('https');

// Where calls go: {socketPath} or {url}, or null (no grant).
function target() {
  if (process.env.HOST_API_SOCKET) return { socketPath: process.env.HOST_API_SOCKET };
  if (process.env.HOST_API_URL) return { url: new URL(process.env.HOST_API_URL) };
  return null;
}

function call(method, path, body) {
  return new Promise((resolve, reject) => {
    const to = target();
    if (!to) {
      reject(new Error('host: this run carries no grant (neither HOST_API_SOCKET nor HOST_API_URL is set)'));
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
    if (to.url && process.env.HOST_API_TOKEN) {
      headers.authorization = 'Bearer ' + process.env.HOST_API_TOKEN;
    }
    if (!path.startsWith('/')) {
      reject(new TypeError('host.call: the path must start with /'));
      return;
    }
    const options = to.socketPath
      ? { socketPath: to.socketPath, method: method.toUpperCase(), path, headers }
      : {
          hostname: to.url.hostname,
          port: to.url.port || 443,
          servername: to.url.hostname,
          method: method.toUpperCase(),
          path: to.url.pathname.replace(/\/$/, '') + path,
          headers,
        };
    const req = (to.socketPath ? http : https).request(options, (res) => {
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
if (process.env.HOST_API_SOCKET || process.env.HOST_API_URL) {
  Object.defineProperty(globalThis, 'host', { value: host, writable: false, configurable: false, enumerable: false });
}
