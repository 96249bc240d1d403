// TextEncoder and TextDecoder (WHATWG Encoding): UTF-8 both ways through the
// guest's natives, and decoding of UTF-16LE, UTF-16BE and windows-1252 (the
// labels latin1, ascii and iso-8859-1 name it), with streaming, BOM handling
// and fatal mode.
(function encoding(natives, util, defineGlobal, shared) {
  'use strict';
  const { utf8Encode, utf8Decode } = natives;

  // The bytes a BufferSource holds, as a Uint8Array over the same memory.
  function bytesOf(input, what) {
    if (input instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && input instanceof SharedArrayBuffer)) return new Uint8Array(input);
    if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    const e = new TypeError('The "' + what + '" argument must be an instance of ArrayBuffer or ArrayBufferView.' +
      (input === null || input === undefined ? ' Received ' + input : ' Received type ' + typeof input + ' (' + util.inspect(input) + ')'));
    e.code = 'ERR_INVALID_ARG_TYPE';
    throw e;
  }
  const encode = (s) => new Uint8Array(utf8Encode(String(s).toWellFormed()));

  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(input = '') { return encode(input); }
    encodeInto(source, destination) {
      if (!(destination instanceof Uint8Array)) {
        const e = new TypeError('The "dest" argument must be an instance of Uint8Array.');
        e.code = 'ERR_INVALID_ARG_TYPE';
        throw e;
      }
      const s = String(source);
      const bytes = encode(s);
      if (bytes.length <= destination.length) {
        destination.set(bytes);
        return { read: s.length, written: bytes.length };
      }
      // Only whole characters: walk the code points until the next does not fit.
      let read = 0;
      let written = 0;
      for (const ch of s) {
        const c = ch.codePointAt(0);
        const n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (written + n > destination.length) break;
        written += n;
        read += ch.length;
      }
      destination.set(bytes.subarray(0, written));
      return { read, written };
    }
  }
  Object.defineProperty(TextEncoder.prototype, Symbol.toStringTag, { value: 'TextEncoder', configurable: true });

  const LABELS = new Map();
  for (const [name, labels] of [
    ['utf-8', ['unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'utf-8', 'utf8', 'x-unicode20utf8']],
    ['utf-16le', ['csunicode', 'iso-10646-ucs-2', 'ucs-2', 'unicode', 'unicodefeff', 'utf-16', 'utf-16le']],
    ['utf-16be', ['unicodefffe', 'utf-16be']],
    ['windows-1252', ['ansi_x3.4-1968', 'ascii', 'cp1252', 'cp819', 'csisolatin1', 'ibm819', 'iso-8859-1',
      'iso-ir-100', 'iso8859-1', 'iso88591', 'iso_8859-1', 'iso_8859-1:1987', 'l1', 'latin1', 'us-ascii',
      'windows-1252', 'x-cp1252']],
  ]) for (const l of labels) LABELS.set(l, name);
  // windows-1252's 0x80..0x9F; the rest of its bytes are their own code points.
  const CP1252 = '\u20ac\x81\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\x8d\u017d\x8f' +
    '\x90\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\x9d\u017e\u0178';
  const CHUNK = 8192;
  const fromUnits = (units) => {
    let out = '';
    for (let i = 0; i < units.length; i += CHUNK) out += String.fromCharCode.apply(null, units.subarray(i, i + CHUNK));
    return out;
  };
  const invalid = (encoding) => {
    const e = new TypeError('The encoded data was not valid for encoding ' + encoding);
    e.code = 'ERR_ENCODING_INVALID_ENCODED_DATA';
    return e;
  };
  // How many bytes at the end of `b` begin a UTF-8 sequence still incomplete.
  function pendingUtf8(b) {
    for (let back = 1; back <= Math.min(3, b.length); back++) {
      const c = b[b.length - back];
      if ((c & 0xc0) === 0x80) continue;
      const need = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 1;
      return need > back ? back : 0;
    }
    return 0;
  }

  class TextDecoder {
    #encoding; #fatal; #ignoreBOM; #pending = new Uint8Array(0); #started = false;
    constructor(label = 'utf-8', options = {}) {
      const encoding = LABELS.get(String(label).trim().toLowerCase());
      if (encoding === undefined) {
        const e = new RangeError('The "' + label + '" encoding is not supported');
        e.code = 'ERR_ENCODING_NOT_SUPPORTED';
        throw e;
      }
      this.#encoding = encoding;
      this.#fatal = !!(options && options.fatal);
      this.#ignoreBOM = !!(options && options.ignoreBOM);
    }
    get encoding() { return this.#encoding; }
    get fatal() { return this.#fatal; }
    get ignoreBOM() { return this.#ignoreBOM; }
    decode(input, options) {
      const stream = !!(options && options.stream);
      let b = input === undefined ? new Uint8Array(0) : bytesOf(input, 'input');
      if (this.#pending.length > 0) {
        const joined = new Uint8Array(this.#pending.length + b.length);
        joined.set(this.#pending);
        joined.set(b, this.#pending.length);
        b = joined;
      }
      let keep = 0;
      if (stream) {
        keep = this.#encoding === 'utf-8' ? pendingUtf8(b) : this.#encoding === 'windows-1252' ? 0 : b.length % 2;
        // A high surrogate at the end waits for its pair.
        if (this.#encoding !== 'utf-8' && this.#encoding !== 'windows-1252' && b.length - keep >= 2) {
          const end = b.length - keep;
          const unit = this.#encoding === 'utf-16le' ? b[end - 2] | (b[end - 1] << 8) : (b[end - 2] << 8) | b[end - 1];
          if (unit >= 0xd800 && unit <= 0xdbff) keep += 2;
        }
      }
      this.#pending = keep > 0 ? b.slice(b.length - keep) : new Uint8Array(0);
      if (keep > 0) b = b.subarray(0, b.length - keep);
      let out = this.#decode(b);
      if (!this.#started && out.length > 0) {
        this.#started = true;
        if (!this.#ignoreBOM && out.charCodeAt(0) === 0xfeff) out = out.slice(1);
      }
      if (!stream) this.#started = false;
      return out;
    }
    #decode(b) {
      switch (this.#encoding) {
        case 'utf-8': {
          const s = utf8Decode(b.buffer, b.byteOffset, b.byteLength, this.#fatal);
          if (s === null || s === undefined) throw invalid('utf-8');
          return s;
        }
        case 'windows-1252': {
          let out = '';
          for (let i = 0; i < b.length; i += CHUNK) {
            const part = b.subarray(i, i + CHUNK);
            out += String.fromCharCode.apply(null, part).replace(/[\x80-\x9f]/g, (c) => CP1252[c.charCodeAt(0) - 0x80]);
          }
          return out;
        }
        default: {
          const le = this.#encoding === 'utf-16le';
          const n = b.length >> 1;
          const units = new Uint16Array(n);
          for (let i = 0; i < n; i++) units[i] = le ? b[2 * i] | (b[2 * i + 1] << 8) : (b[2 * i] << 8) | b[2 * i + 1];
          let s = fromUnits(units);
          if (b.length % 2 === 1) s += '\ufffd';
          const fixed = s.toWellFormed();
          if (this.#fatal && (fixed !== s || b.length % 2 === 1)) throw invalid(this.#encoding);
          return fixed;
        }
      }
    }
  }
  Object.defineProperty(TextDecoder.prototype, Symbol.toStringTag, { value: 'TextDecoder', configurable: true });

  defineGlobal('TextEncoder', TextEncoder, false);
  defineGlobal('TextDecoder', TextDecoder, false);
  shared.bytesOf = bytesOf;
  shared.utf8 = encode;
})
