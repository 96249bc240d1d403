// The grant relay in an OpenShell sandbox (node relay.js <port> <dir>).
//
// The guest's host API client connects to <dir>/host-api.sock; plimsoll
// dials into 127.0.0.1:<port> through the gateway's ForwardTcp and serves
// the run's broker on each connection it opens. The relay pairs one guest
// connection with one waiting plimsoll connection and copies bytes both
// ways until either side closes; it makes no connection of its own, so the
// sandbox keeps no network rule. It holds no credential: everything that
// decides what a call may do is the broker's, outside the sandbox.
'use strict';
const net = require('net');
const fs = require('fs');

const port = Number(process.argv[process.argv.length - 2]);
const dir = process.argv[process.argv.length - 1];
const sock = dir + '/host-api.sock';
// Guest connections waiting for a plimsoll one, at most this many.
const MAX_WAITING = 64;

const idle = [];
const waiting = [];

function drop(list, s) {
  const i = list.indexOf(s);
  if (i >= 0) list.splice(i, 1);
}

function pair(up, guest) {
  const end = () => {
    up.destroy();
    guest.destroy();
  };
  up.on('close', end);
  guest.on('close', end);
  up.pipe(guest);
  guest.pipe(up);
}

const upstream = net.createServer({ allowHalfOpen: true }, (up) => {
  up.on('error', () => up.destroy());
  const guest = waiting.shift();
  if (guest) return pair(up, guest);
  idle.push(up);
  up.once('close', () => drop(idle, up));
});

const guests = net.createServer({ allowHalfOpen: true }, (guest) => {
  guest.on('error', () => guest.destroy());
  const up = idle.shift();
  if (up) return pair(up, guest);
  if (waiting.length >= MAX_WAITING) return guest.destroy();
  waiting.push(guest);
  guest.once('close', () => drop(waiting, guest));
});

fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
try {
  fs.unlinkSync(sock);
} catch (e) {
  if (e.code !== 'ENOENT') throw e;
}
let listening = 0;
const ready = () => {
  listening += 1;
  if (listening === 2) process.stdout.write('ready\n');
};
const fail = (e) => {
  process.stderr.write('relay: ' + e.message + '\n');
  process.exit(2);
};
upstream.on('error', fail);
guests.on('error', fail);
upstream.listen(port, '127.0.0.1', ready);
guests.listen(sock, ready);
