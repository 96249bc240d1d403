// Node's Buffer, the part snippets use: a Uint8Array subclass made from
// strings (utf8, hex, base64, base64url, latin1, ascii, utf16le), arrays and
// buffers; alloc, concat, byteLength, compare; toString in each encoding,
// slicing that shares memory, search, copy, fill, and the fixed-width
// integer, BigInt and float readers and writers with Node's range errors.
(function buffer(natives, util, defineGlobal, shared) {
  'use strict';
  const { utf8Decode } = natives;
  const { invalidArg, utf8 } = shared;
  const CUSTOM = Symbol.for('nodejs.util.inspect.custom');
  const ENCODINGS = {
    utf8: 'utf8', 'utf-8': 'utf8', hex: 'hex', base64: 'base64', base64url: 'base64url', latin1: 'latin1',
    binary: 'latin1', ascii: 'ascii', utf16le: 'utf16le', 'utf-16le': 'utf16le', ucs2: 'utf16le', 'ucs-2': 'utf16le',
  };
  function encodingOf(e) {
    if (e === undefined || e === null) return 'utf8';
    const found = ENCODINGS[String(e).toLowerCase()];
    if (found === undefined) {
      const err = new TypeError('Unknown encoding: ' + e);
      err.code = 'ERR_UNKNOWN_ENCODING';
      throw err;
    }
    return found;
  }
  function outOfRange(what, range, received) {
    const e = new RangeError('The value of "' + what + '" is out of range. It must be ' + range + '. Received ' + received);
    e.code = 'ERR_OUT_OF_RANGE';
    return e;
  }
  const showNumber = (n) => typeof n === 'bigint' ? String(n) + 'n' : Number.isInteger(n) && Math.abs(n) >= 1000
    ? String(n).replace(/(\d)(?=(\d{3})+$)/g, '$1_') : String(n);

  // ------------------------------------------------------------ encode/decode
  function bytesFromString(s, encoding) {
    switch (encoding) {
      case 'utf8': return utf8(s);
      case 'hex': {
        const n = s.length >>> 1;
        const out = new Uint8Array(n);
        let i = 0;
        for (; i < n; i++) {
          const b = parseInt(s.substr(2 * i, 2), 16);
          if (!/^[0-9a-fA-F]{2}$/.test(s.substr(2 * i, 2))) break;
          out[i] = b;
        }
        return out.subarray(0, i);
      }
      case 'base64': case 'base64url': {
        let clean = s.replace(/[^A-Za-z0-9+/\-_=]/g, '');
        const eq = clean.indexOf('=');
        if (eq >= 0) clean = clean.slice(0, eq);
        clean = clean.replace(/-/g, '+').replace(/_/g, '/');
        if (clean.length % 4 === 1) clean = clean.slice(0, -1);
        return Uint8Array.fromBase64(clean, { lastChunkHandling: 'loose' });
      }
      case 'latin1': case 'ascii': {
        const out = new Uint8Array(s.length);
        for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
        return out;
      }
      default: { // utf16le
        const out = new Uint8Array(s.length * 2);
        for (let i = 0; i < s.length; i++) {
          const c = s.charCodeAt(i);
          out[2 * i] = c & 0xff;
          out[2 * i + 1] = c >>> 8;
        }
        return out;
      }
    }
  }
  const CHUNK = 8192;
  const fromCodes = (codes) => {
    let out = '';
    for (let i = 0; i < codes.length; i += CHUNK) out += String.fromCharCode.apply(null, codes.subarray(i, i + CHUNK));
    return out;
  };
  function stringFromBytes(b, encoding) {
    switch (encoding) {
      case 'utf8': return utf8Decode(b.buffer, b.byteOffset, b.byteLength, false);
      case 'hex': return b.toHex();
      case 'base64': return b.toBase64();
      case 'base64url': return b.toBase64({ alphabet: 'base64url', omitPadding: true });
      case 'latin1': return fromCodes(b);
      case 'ascii': return fromCodes(b.map((c) => c & 0x7f));
      default: return fromCodes(new Uint16Array(b.buffer.slice(b.byteOffset, b.byteOffset + (b.byteLength & ~1))));
    }
  }

  // ------------------------------------------------------------------ Buffer
  class Buffer extends Uint8Array {
    static from(value, encodingOrOffset, length) {
      if (typeof value === 'string') return wrap(bytesFromString(value, encodingOf(encodingOrOffset)));
      if (value instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && value instanceof SharedArrayBuffer)) {
        const offset = encodingOrOffset === undefined ? 0 : Number(encodingOrOffset) || 0;
        const max = value.byteLength - offset;
        if (max < 0) throw outOfRange('offset', '>= 0 and <= ' + value.byteLength, offset);
        return new Buffer(value, offset, length === undefined ? max : Math.min(Number(length) || 0, max));
      }
      if (ArrayBuffer.isView(value)) {
        if (value instanceof Uint8Array) return wrap(Uint8Array.prototype.slice.call(value)); // a copy, even of a Buffer
        return wrap(Uint8Array.from(value, (x) => Number(x) & 0xff));
      }
      if (value !== null && typeof value === 'object') {
        if (value.type === 'Buffer' && Array.isArray(value.data)) return wrap(Uint8Array.from(value.data));
        if (typeof value.length === 'number' || Array.isArray(value)) return wrap(Uint8Array.from(value, (x) => Number(x) & 0xff));
        const prim = value[Symbol.toPrimitive] ? value[Symbol.toPrimitive]('string') : value.valueOf();
        if (prim !== value && (typeof prim === 'string' || typeof prim === 'object')) return Buffer.from(prim, encodingOrOffset, length);
      }
      throw invalidArg('first', 'of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object', value);
    }
    static alloc(size, fill, encoding) {
      checkSize(size);
      const b = new Buffer(size);
      if (fill !== undefined && fill !== 0 && size > 0) b.fill(fill, 0, size, encoding);
      return b;
    }
    static allocUnsafe(size) { checkSize(size); return new Buffer(size); }
    static allocUnsafeSlow(size) { checkSize(size); return new Buffer(size); }
    static isBuffer(b) { return b instanceof Buffer; }
    static isEncoding(e) { return typeof e === 'string' && ENCODINGS[e.toLowerCase()] !== undefined; }
    static byteLength(value, encoding) {
      if (typeof value !== 'string') {
        if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return value.byteLength;
        throw invalidArg('string', 'of type string or an instance of Buffer or ArrayBuffer', value);
      }
      const e = ENCODINGS[String(encoding ?? 'utf8').toLowerCase()] ?? 'utf8';
      if (e === 'base64' || e === 'base64url') {
        let n = value.length;
        while (n > 0 && value.charCodeAt(n - 1) === 0x3d) n--;
        return (n * 3) >>> 2;
      }
      if (e === 'hex') return value.length >>> 1;
      if (e === 'latin1' || e === 'ascii') return value.length;
      if (e === 'utf16le') return value.length * 2;
      return utf8(value).length;
    }
    static concat(list, totalLength) {
      if (!Array.isArray(list)) throw invalidArg('list', 'an instance of Array', list);
      const total = totalLength === undefined ? list.reduce((n, b) => n + b.length, 0) : Number(totalLength);
      const out = Buffer.alloc(total);
      let at = 0;
      for (let i = 0; i < list.length && at < total; i++) {
        const b = list[i];
        if (!(b instanceof Uint8Array)) throw invalidArg('list[' + i + ']', 'an instance of Buffer or Uint8Array', b);
        const part = b.subarray(0, Math.min(b.length, total - at));
        out.set(part, at);
        at += part.length;
      }
      return out;
    }
    static compare(a, b) {
      if (!(a instanceof Uint8Array)) throw invalidArg('buf1', 'an instance of Buffer or Uint8Array', a);
      if (!(b instanceof Uint8Array)) throw invalidArg('buf2', 'an instance of Buffer or Uint8Array', b);
      const n = Math.min(a.length, b.length);
      for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
      return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
    }

    toString(encoding, start = 0, end = this.length) {
      start = Math.max(0, start | 0);
      end = Math.min(this.length, end === undefined ? this.length : end | 0);
      if (end <= start) return '';
      return stringFromBytes(this.subarray(start, end), encodingOf(encoding));
    }
    toLocaleString(encoding, start, end) { return this.toString(encoding, start, end); }
    toJSON() { return { type: 'Buffer', data: Array.from(this) }; }
    equals(other) {
      if (!(other instanceof Uint8Array)) throw invalidArg('otherBuffer', 'an instance of Buffer or Uint8Array', other);
      return Buffer.compare(this, other) === 0;
    }
    compare(other) { return Buffer.compare(this, other); }
    slice(start, end) { return this.subarray(start, end); }
    write(string, offset = 0, length, encoding) {
      if (typeof offset === 'string') { encoding = offset; offset = 0; length = undefined; }
      else if (typeof length === 'string') { encoding = length; length = undefined; }
      const bytes = bytesFromString(String(string), encodingOf(encoding));
      const room = Math.min(this.length - offset, length === undefined ? Infinity : length);
      let n = Math.min(bytes.length, Math.max(0, room));
      // Never half a UTF-8 character.
      if (encodingOf(encoding) === 'utf8') while (n > 0 && n < bytes.length && (bytes[n] & 0xc0) === 0x80) n--;
      this.set(bytes.subarray(0, n), offset);
      return n;
    }
    fill(value, offset = 0, end = this.length, encoding) {
      if (typeof offset === 'string') { encoding = offset; offset = 0; end = this.length; }
      if (typeof value === 'string') {
        const bytes = value.length === 1 && encoding === undefined && value.charCodeAt(0) < 128
          ? Uint8Array.of(value.charCodeAt(0)) : bytesFromString(value, encodingOf(encoding));
        if (bytes.length === 0) return super.fill(0, offset, end);
        for (let i = offset; i < end; i++) this[i] = bytes[(i - offset) % bytes.length];
        return this;
      }
      if (value instanceof Uint8Array) {
        for (let i = offset; i < end; i++) this[i] = value[(i - offset) % value.length];
        return this;
      }
      return super.fill(Number(value) & 0xff, offset, end);
    }
    copy(target, targetStart = 0, sourceStart = 0, sourceEnd = this.length) {
      const part = this.subarray(sourceStart, Math.min(sourceEnd, sourceStart + target.length - targetStart));
      target.set(part, targetStart);
      return part.length;
    }
    indexOf(value, byteOffset = 0, encoding) { return search(this, value, byteOffset, encoding, false); }
    lastIndexOf(value, byteOffset = this.length, encoding) { return search(this, value, byteOffset, encoding, true); }
    includes(value, byteOffset, encoding) { return this.indexOf(value, byteOffset, encoding) !== -1; }
    swap16() { return swap(this, 2); }
    swap32() { return swap(this, 4); }
    swap64() { return swap(this, 8); }
    [CUSTOM]() {
      // Node: `<Buffer >` when empty, then at most 50 bytes and a count.
      const bytes = [];
      const n = Math.min(this.length, 50);
      for (let i = 0; i < n; i++) bytes.push((this[i] < 16 ? '0' : '') + this[i].toString(16));
      const more = this.length - n;
      return '<Buffer ' + bytes.join(' ') + (more > 0 ? ' ... ' + more + ' more byte' + (more > 1 ? 's' : '') : '') + '>';
    }
  }
  const wrap = (u8) => new Buffer(u8.buffer, u8.byteOffset, u8.length);
  function checkSize(size) {
    if (typeof size !== 'number') throw invalidArg('size', 'of type number', size);
    if (!(size >= 0 && size <= 2 ** 32)) throw outOfRange('size', '>= 0 && <= ' + showNumber(2 ** 32), showNumber(size));
  }
  function swap(b, size) {
    if (b.length % size !== 0) {
      const e = new RangeError('Buffer size must be a multiple of ' + size * 8 + '-bits');
      e.code = 'ERR_INVALID_BUFFER_SIZE';
      throw e;
    }
    for (let i = 0; i < b.length; i += size) b.subarray(i, i + size).reverse();
    return b;
  }
  function search(b, value, from, encoding, last) {
    if (typeof from === 'string') { encoding = from; from = last ? b.length : 0; }
    from = from < 0 ? Math.max(0, b.length + from) : from;
    const needle = typeof value === 'number' ? Uint8Array.of(value & 0xff)
      : typeof value === 'string' ? bytesFromString(value, encodingOf(encoding)) : value;
    if (needle.length === 0) return last ? Math.min(from, b.length) : Math.min(from, b.length);
    const match = (i) => { for (let j = 0; j < needle.length; j++) if (b[i + j] !== needle[j]) return false; return true; };
    if (last) {
      for (let i = Math.min(from, b.length - needle.length); i >= 0; i--) if (match(i)) return i;
    } else {
      for (let i = from; i <= b.length - needle.length; i++) if (match(i)) return i;
    }
    return -1;
  }

  // ----------------------------------------- fixed-width readers and writers
  function checkOffset(b, offset, size) {
    if (offset === undefined) offset = 0;
    if (typeof offset !== 'number') throw invalidArg('offset', 'of type number', offset);
    if (!Number.isInteger(offset)) throw outOfRange('offset', 'an integer', offset);
    if (b.length - size < 0) {
      const e = new RangeError('Attempt to access memory outside buffer bounds');
      e.code = 'ERR_BUFFER_OUT_OF_BOUNDS';
      throw e;
    }
    if (offset < 0 || offset > b.length - size) throw outOfRange('offset', '>= 0 and <= ' + (b.length - size), offset);
    return offset;
  }
  const view = (b) => new DataView(b.buffer, b.byteOffset, b.byteLength);
  const P = Buffer.prototype;
  const define = (names, fn) => { for (const n of names) Object.defineProperty(P, n, { value: fn, writable: true, configurable: true }); };
  for (const [type, size, get, set, min, max] of [
    ['UInt8', 1, 'getUint8', 'setUint8', 0, 2 ** 8 - 1], ['Int8', 1, 'getInt8', 'setInt8', -(2 ** 7), 2 ** 7 - 1],
    ['UInt16', 2, 'getUint16', 'setUint16', 0, 2 ** 16 - 1], ['Int16', 2, 'getInt16', 'setInt16', -(2 ** 15), 2 ** 15 - 1],
    ['UInt32', 4, 'getUint32', 'setUint32', 0, 2 ** 32 - 1], ['Int32', 4, 'getInt32', 'setInt32', -(2 ** 31), 2 ** 31 - 1],
    ['Float', 4, 'getFloat32', 'setFloat32'], ['Double', 8, 'getFloat64', 'setFloat64'],
    ['BigUInt64', 8, 'getBigUint64', 'setBigUint64', 0n, 2n ** 64n - 1n], ['BigInt64', 8, 'getBigInt64', 'setBigInt64', -(2n ** 63n), 2n ** 63n - 1n],
  ]) {
    for (const endian of size === 1 ? [''] : ['LE', 'BE']) {
      const little = endian === 'LE';
      const names = (verb) => {
        const n = [verb + type + endian];
        if (type.includes('UInt')) n.push(verb + type.replace('UInt', 'Uint') + endian);
        return n;
      };
      define(names('read'), function (offset) {
        offset = checkOffset(this, offset, size);
        return view(this)[get](offset, little);
      });
      define(names('write'), function (value, offset) {
        offset = checkOffset(this, offset, size);
        if (min !== undefined) {
          if (typeof min === 'bigint' && typeof value !== 'bigint') throw invalidArg('value', 'of type bigint', value);
          if (value < min || value > max) {
            const range = typeof min === 'bigint'
              ? (min === 0n ? '>= 0n and < 2n ** ' + BigInt(size * 8) + 'n' : '>= -(2n ** ' + BigInt(size * 8 - 1) + 'n) and < 2n ** ' + BigInt(size * 8 - 1) + 'n')
              : size > 4 || max > 2 ** 31 || min < -(2 ** 31) ? (min === 0 ? '>= 0 and < 2 ** ' + size * 8 : '>= -(2 ** ' + (size * 8 - 1) + ') and < 2 ** ' + (size * 8 - 1))
                : '>= ' + showNumber(min) + ' and <= ' + showNumber(max);
            throw outOfRange('value', range, showNumber(value));
          }
        }
        view(this)[set](offset, typeof min === 'bigint' ? value : Number(value), little);
        return offset + size;
      });
    }
  }

  defineGlobal('Buffer', Buffer, false);
})
