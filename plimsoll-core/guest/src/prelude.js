// plimsoll's QuickJS prelude: Node-like console and process, and the run's
// exit bookkeeping. Evaluated once, before the snapshot; it returns a setup
// function that closes over the guest's natives and the formatter
// (inspect.js), so none of them is reachable by name.
(function setup(native, util) {
  'use strict';
  const { inspect, formatValue, formatPrimitive, formatNumber, errorBase } = util;
  const nativeWrite = native.write;
  // Lone surrogates cannot be encoded as UTF-8: print U+FFFD, as Node does.
  const write = (fd, text) => nativeWrite(fd, text.isWellFormed() ? text : text.toWellFormed());
  const exitNow = native.exit;
  const hostCall = native.hostCall;

  Object.defineProperty(Math, 'random', {
    value: function random() { return native.random(); },
    writable: true, configurable: true, enumerable: false,
  });

  // --------------------------------------------------------------- format
  function format(args) {
    const first = args[0];
    let i = 0;
    let out = '';
    if (typeof first === 'string') {
      i = 1;
      if (args.length === 1) return first;
      let last = 0;
      for (let p = 0; p < first.length - 1; p++) {
        if (first.charCodeAt(p) !== 37) continue; // '%'
        const c = first[p + 1];
        let rep;
        if (c === '%') { out += first.slice(last, p) + '%'; last = p + 2; p++; continue; }
        if (i >= args.length) continue;
        const a = args[i];
        switch (c) {
          case 's':
            rep = typeof a === 'bigint' ? a + 'n' : typeof a === 'symbol' || typeof a === 'number' ? formatPrimitive(a, false)
              : (a !== null && typeof a === 'object') ? inspect(a, { depth: 0 }) : String(a);
            break;
          case 'd':
            rep = typeof a === 'bigint' ? a + 'n' : typeof a === 'symbol' ? 'NaN' : formatNumber(Number(a));
            break;
          case 'i':
            rep = typeof a === 'bigint' ? a + 'n' : typeof a === 'symbol' ? 'NaN' : formatNumber(parseInt(a));
            break;
          case 'f':
            rep = typeof a === 'symbol' ? 'NaN' : formatNumber(parseFloat(a));
            break;
          case 'j':
            try { rep = JSON.stringify(a); } catch (e) { rep = '[Circular]'; }
            break;
          case 'o': case 'O':
            rep = inspect(a, { depth: c === 'o' ? 4 : 2 });
            break;
          case 'c':
            rep = '';
            break;
          default:
            continue;
        }
        out += first.slice(last, p) + rep;
        last = p + 2;
        p++;
        i++;
      }
      out += first.slice(last);
    }
    for (; i < args.length; i++) {
      const a = args[i];
      out += (out === '' && i === 0 ? '' : ' ') + (typeof a === 'string' ? a : inspect(a));
    }
    return out;
  }

  // Node's console.table for the common shapes: rows of objects or of values.
  function table(data, only) {
    if (data === null || typeof data !== 'object') return format([data]);
    const cell = (v) => formatValue({ depth: 1, breakLength: Infinity, compact: 3, indentationLvl: 0,
      currentDepth: 0, seen: [], circular: new Map() }, v, 1, false);
    // Node's column widths: East Asian wide characters take two columns.
    const columns = (text) => {
      let n = 0;
      for (const ch of text) {
        const c = ch.codePointAt(0);
        n += (c >= 0x1100 && c <= 0x115f) || (c >= 0x2e80 && c <= 0xa4cf) || (c >= 0xac00 && c <= 0xd7a3) ||
          (c >= 0xf900 && c <= 0xfaff) || (c >= 0xfe30 && c <= 0xfe4f) || (c >= 0xff00 && c <= 0xff60) ||
          (c >= 0xffe0 && c <= 0xffe6) || (c >= 0x1f300 && c <= 0x1f64f) || (c >= 0x1f900 && c <= 0x1f9ff) ||
          (c >= 0x20000 && c <= 0x3fffd) ? 2 : (c >= 0x300 && c <= 0x36f) || c === 0x200d ? 0 : 1;
      }
      return n;
    };
    const render = (head, body) => {
      const width = head.map((h, i) => Math.max(columns(h), ...body.map((r) => columns(r[i]))) + 2);
      const line = (l, m, r) => l + width.map((w) => '─'.repeat(w)).join(m) + r;
      const row = (cells) => '│' + cells.map((c, i) => ' ' + c + ' '.repeat(width[i] - 1 - columns(c))).join('│') + '│';
      return [line('┌', '┬', '┐'), row(head), line('├', '┼', '┤'), ...body.map(row), line('└', '┴', '┘')].join('\n');
    };
    // A Map or a Set is listed by iteration order, as Node does.
    if (data instanceof Map) return render(['(iteration index)', 'Key', 'Values'], [...data].map(([k, v], i) => [String(i), cell(k), cell(v)]));
    if (data instanceof Set) return render(['(iteration index)', 'Values'], [...data].map((v, i) => [String(i), cell(v)]));
    const rows = [];
    const cols = [];
    let values = false;
    const entries = Array.isArray(data) ? data.map((v, i) => [i, v]) : Object.entries(data);
    for (const [index, row] of entries) {
      const cells = new Map();
      if (row !== null && typeof row === 'object') {
        for (const k of Object.keys(row)) {
          if (Array.isArray(only) && !only.includes(k)) continue;
          if (!cols.includes(k)) cols.push(k);
          cells.set(k, cell(row[k]));
        }
      } else {
        values = true;
        cells.set('\u0000values', cell(row));
      }
      rows.push([String(index), cells]);
    }
    const head = ['(index)', ...cols, ...(values ? ['Values'] : [])];
    const keysOf = [null, ...cols, ...(values ? ['\u0000values'] : [])];
    return render(head, rows.map(([index, cells]) => keysOf.map((k) => k === null ? index : (cells.get(k) ?? ''))));
  }

  // -------------------------------------------------------------- console
  let groupIndent = '';
  const counts = new Map();
  const timers = new Map();
  const emit = (fd, text) => {
    if (groupIndent !== '') text = groupIndent + text.split('\n').join('\n' + groupIndent);
    write(fd, text + '\n');
  };
  const console = {
    log(...a) { emit(1, format(a)); },
    info(...a) { emit(1, format(a)); },
    debug(...a) { emit(1, format(a)); },
    error(...a) { emit(2, format(a)); },
    warn(...a) { emit(2, format(a)); },
    dir(v, options) { emit(1, inspect(v, options)); },
    trace(...a) {
      const e = new Error(format(a));
      e.name = 'Trace';
      emit(2, errorBase(e));
    },
    assert(cond, ...a) {
      if (!cond) {
        if (typeof a[0] === 'string') a[0] = 'Assertion failed: ' + a[0];
        else a.unshift('Assertion failed');
        emit(2, format(a));
      }
    },
    count(label = 'default') {
      label = String(label);
      const n = (counts.get(label) || 0) + 1;
      counts.set(label, n);
      emit(1, label + ': ' + n);
    },
    countReset(label = 'default') { counts.delete(String(label)); },
    time(label = 'default') { timers.set(String(label), performance.now()); },
    timeLog(label = 'default', ...a) {
      const t = timers.get(String(label));
      if (t !== undefined) emit(1, format([label + ': ' + (performance.now() - t).toFixed(3) + 'ms', ...a]));
    },
    timeEnd(label = 'default') {
      const t = timers.get(String(label));
      if (t !== undefined) {
        timers.delete(String(label));
        emit(1, label + ': ' + (performance.now() - t).toFixed(3) + 'ms');
      }
    },
    group(...a) { if (a.length > 0) emit(1, format(a)); groupIndent += '  '; },
    groupCollapsed(...a) { if (a.length > 0) emit(1, format(a)); groupIndent += '  '; },
    groupEnd() { groupIndent = groupIndent.slice(0, -2); },
    table(data, columns) { emit(1, table(data, columns)); },
  };
  Object.defineProperty(globalThis, 'console', { value: console, writable: true, configurable: true, enumerable: false });

  // -------------------------------------------------------------- process
  const stream = (fd) => ({
    write(chunk, encoding, cb) {
      write(fd, typeof chunk === 'string' ? chunk : String(chunk));
      if (typeof encoding === 'function') encoding();
      else if (typeof cb === 'function') cb();
      return true;
    },
    isTTY: false,
  });
  const exitCodeOf = (c) => {
    const n = Number(c);
    return Number.isFinite(n) ? (Math.trunc(n) & 0xff) : 1;
  };
  const process = {
    argv: [],
    env: {},
    exitCode: undefined,
    platform: 'wasi',
    stdout: stream(1),
    stderr: stream(2),
    exit(code) {
      exitNow(exitCodeOf(code === undefined ? (process.exitCode === undefined ? 0 : process.exitCode) : code));
    },
    nextTick(fn, ...args) { queueMicrotask(() => fn(...args)); },
  };
  Object.defineProperty(globalThis, 'process', { value: process, writable: true, configurable: true, enumerable: false });
  Object.defineProperty(globalThis, 'global', { value: globalThis, writable: true, configurable: true, enumerable: false });

  // ----------------------------------------------------------------- host
  // A granted run's API client, synchronous: each call is brokered by the host
  // (which holds the credential) and answered with {status, body, json()}.
  // A string body is sent as is; any other body is sent as JSON.
  function call(method, path, body) {
    if (typeof method !== 'string') throw new TypeError('host.call: the method must be a string');
    if (typeof path !== 'string') throw new TypeError('host.call: the path must be a string');
    let payload = null;
    let contentType = null;
    if (body !== undefined && body !== null) {
      if (typeof body === 'string') {
        payload = body;
      } else {
        payload = JSON.stringify(body);
        contentType = 'application/json';
      }
    }
    const a = JSON.parse(hostCall(JSON.stringify({ method: method.toUpperCase(), path, body: payload, contentType })));
    const answer = {
      status: a.status,
      ok: a.status >= 200 && a.status < 300,
      body: a.body,
      contentType: a.contentType,
      json() { return JSON.parse(a.body); },
    };
    return answer;
  }
  const host = Object.freeze({
    call,
    get(path) { return call('GET', path); },
    post(path, body) { return call('POST', path, body); },
    put(path, body) { return call('PUT', path, body); },
    patch(path, body) { return call('PATCH', path, body); },
    del(path) { return call('DELETE', path); },
  });

  // --------------------------------------------------------------- timers
  // Node's timers on the run's own clock. The guest's event loop (lib.rs)
  // asks nextTimer() how long until the next one is due, waits that long
  // through the host (which ends the run at its deadline instead), and calls
  // runTimer() for one callback at a time, draining the microtasks it queued
  // before the next, as Node does. Immediates run before timers.
  const TIMEOUT_MAX = 2 ** 31 - 1;
  const clock = () => performance.now();
  const queue = []; // timers by due time, then by order of scheduling
  const immediates = [];
  const byId = new Map();
  let lastId = 0;
  let order = 0;
  const place = (t) => {
    let lo = 0;
    let hi = queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const q = queue[mid];
      if (q._due < t._due || (q._due === t._due && q._order < t._order)) lo = mid + 1;
      else hi = mid;
    }
    queue.splice(lo, 0, t);
  };
  const unplace = (t) => {
    const i = queue.indexOf(t);
    if (i >= 0) queue.splice(i, 1);
  };
  const callable = (fn) => {
    if (typeof fn !== 'function') {
      const received = fn === null || fn === undefined ? String(fn)
        : typeof fn === 'object' ? 'an instance of ' + ((fn.constructor && fn.constructor.name) || 'Object')
          : 'type ' + typeof fn + ' (' + inspect(fn) + ')';
      const e = new TypeError('The "callback" argument must be of type function. Received ' + received);
      e.code = 'ERR_INVALID_ARG_TYPE';
      throw e;
    }
    return fn;
  };
  class Timeout {
    constructor(fn, after, args, repeat) {
      after = Number(after);
      if (!(after >= 1 && after <= TIMEOUT_MAX)) after = 1;
      Object.defineProperties(this, {
        _fn: { value: fn, writable: true }, _args: { value: args }, _after: { value: after },
        _repeat: { value: repeat }, _id: { value: ++lastId }, _ref: { value: true, writable: true },
        _due: { value: 0, writable: true }, _order: { value: 0, writable: true },
        _live: { value: false, writable: true },
      });
      this._schedule();
    }
    _schedule() {
      this._due = clock() + this._after;
      this._order = ++order;
      this._live = true;
      byId.set(this._id, this);
      place(this);
    }
    ref() { this._ref = true; return this; }
    unref() { this._ref = false; return this; }
    hasRef() { return this._ref; }
    refresh() {
      if (this._live) { unplace(this); this._schedule(); }
      return this;
    }
    close() { clear(this); return this; }
    [Symbol.toPrimitive]() { return this._id; }
  }
  Object.defineProperty(Timeout.prototype, Symbol.toStringTag, { value: 'Timeout', configurable: true });
  class Immediate {
    constructor(fn, args) {
      Object.defineProperties(this, {
        _fn: { value: fn }, _args: { value: args }, _ref: { value: true, writable: true },
        _live: { value: true, writable: true },
      });
      immediates.push(this);
    }
    ref() { this._ref = true; return this; }
    unref() { this._ref = false; return this; }
    hasRef() { return this._ref; }
  }
  function clear(t) {
    if (t === null || t === undefined) return;
    const timer = t instanceof Timeout ? t : byId.get(typeof t === 'number' || typeof t === 'string' ? Number(t) : NaN);
    if (!timer || !timer._live) return;
    timer._live = false;
    byId.delete(timer._id);
    unplace(timer);
  }
  const defineGlobal = (name, value, enumerable = true) => Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable });
  defineGlobal('setTimeout', function setTimeout(fn, after, ...args) { return new Timeout(callable(fn), after, args, false); });
  defineGlobal('setInterval', function setInterval(fn, after, ...args) { return new Timeout(callable(fn), after, args, true); });
  defineGlobal('setImmediate', function setImmediate(fn, ...args) { return new Immediate(callable(fn), args); });
  defineGlobal('clearTimeout', function clearTimeout(t) { clear(t); });
  defineGlobal('clearInterval', function clearInterval(t) { clear(t); });
  defineGlobal('clearImmediate', function clearImmediate(i) {
    if (i instanceof Immediate && i._live) { i._live = false; immediates.splice(immediates.indexOf(i), 1); }
  });
  // The milliseconds until the next callback is due (0: now), or -1 when
  // nothing referenced is left and the run may end.
  function nextTimer() {
    if (immediates.some((i) => i._ref) || (immediates.length > 0 && queue.some((t) => t._ref))) return 0;
    if (!queue.some((t) => t._ref)) return -1;
    return Math.max(0, queue[0]._due - clock());
  }
  // Runs one callback that is due, if any.
  function runTimer() {
    if (immediates.length > 0) {
      const i = immediates.shift();
      i._live = false;
      i._fn(...i._args);
      return;
    }
    const t = queue[0];
    if (t === undefined || t._due > clock()) return;
    queue.shift();
    if (t._repeat) {
      t._order = ++order;
      t._due = clock() + t._after;
      place(t);
    } else {
      t._live = false;
      byId.delete(t._id);
    }
    Reflect.apply(t._fn, t, t._args);
  }

  // ------------------------------------------------------- run bookkeeping
  const unhandled = new Map(); // promise -> reason, rejected with no handler yet
  // Reports the rejections still unhandled after a task (other than the
  // snippet's own completion, `main`) as Node does: true if there were any.
  function rejections(main) {
    let any = false;
    for (const [promise, reason] of unhandled) {
      if (promise === main) continue;
      write(2, 'Uncaught (in promise) ' + inspect(reason) + '\n');
      unhandled.delete(promise);
      any = true;
    }
    return any;
  }
  return {
    nextTimer,
    runTimer,
    defineGlobal,
    rejections,
    enableHost() {
      Object.defineProperty(globalThis, 'host', { value: host, writable: false, configurable: false, enumerable: false });
    },
    track(promise, reason, handled) {
      if (handled) unhandled.delete(promise);
      else unhandled.set(promise, reason);
    },
    uncaught(error) {
      // The tier has no Intl (docs/wasm.md): the error says so, not only that
      // the name is undefined. `typeof Intl` stays 'undefined' for feature tests.
      if (error instanceof ReferenceError && error.message === 'Intl is not defined') {
        error.message = 'Intl is not defined: the process tier (QuickJS in WebAssembly) has no Intl; ' +
          'format without it, or set minimum_isolation to "container" to run on Node';
      }
      write(2, 'Uncaught ' + inspect(error) + '\n');
    },
    // The run's exit code once every job has run: 1 if anything failed or a
    // rejection was never handled (Node's default), else process.exitCode.
    finish(main, failed) {
      unhandled.delete(main);
      for (const reason of unhandled.values()) {
        write(2, 'Uncaught (in promise) ' + inspect(reason) + '\n');
        failed = true;
      }
      if (failed) return 1;
      return process.exitCode === undefined ? 0 : exitCodeOf(process.exitCode);
    },
  };
})
