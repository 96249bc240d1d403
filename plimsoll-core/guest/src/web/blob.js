// Blob (File API) over bytes held in memory: made from strings (as UTF-8),
// buffers, views and other Blobs; size, type, slice, text, arrayBuffer and
// bytes. No stream(): the guest has no ReadableStream.
(function blob(natives, util, defineGlobal, shared) {
  'use strict';
  const { bytesOf, utf8 } = shared;
  const { utf8Decode } = natives;
  const contents = new WeakMap(); // Blob -> Uint8Array
  const types = new WeakMap(); // Blob -> its MIME type
  const mime = (t) => (t === undefined ? '' : /[^\x20-\x7e]/.test(String(t)) ? '' : String(t).toLowerCase());
  class Blob {
    constructor(parts = [], options = {}) {
      if (parts === null || typeof parts !== 'object' || typeof parts[Symbol.iterator] !== 'function') {
        throw new TypeError('The "sources" argument must be a sequence.');
      }
      const chunks = [];
      for (const p of parts) {
        if (p instanceof Blob) chunks.push(contents.get(p));
        else if (p instanceof ArrayBuffer || ArrayBuffer.isView(p)) chunks.push(bytesOf(p, 'sources').slice());
        else chunks.push(utf8(p));
      }
      const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
      let at = 0;
      for (const c of chunks) { all.set(c, at); at += c.length; }
      contents.set(this, all);
      types.set(this, mime(options && options.type));
    }
    get size() { return contents.get(this).length; }
    get type() { return types.get(this) ?? ''; }
    slice(start = 0, end = this.size, type = '') {
      const b = new Blob([], { type });
      contents.set(b, contents.get(this).slice(start, end));
      return b;
    }
    async text() { const b = contents.get(this); return utf8Decode(b.buffer, b.byteOffset, b.byteLength, false); }
    async arrayBuffer() { return contents.get(this).slice().buffer; }
    async bytes() { return contents.get(this).slice(); }
  }
  Object.defineProperty(Blob.prototype, Symbol.toStringTag, { value: 'Blob', configurable: true });
  defineGlobal('Blob', Blob, false);
})
