// structuredClone (HTML's structured serialization, in one step): primitives,
// wrapper objects, Date, RegExp, ArrayBuffer and its views, Map, Set, the
// Error types, arrays and plain objects (own enumerable string keys; a class
// instance comes back a plain object), with shared and circular references
// kept. Anything else (functions, symbols, WeakMaps, promises…) is a
// DataCloneError. ArrayBuffers listed in `transfer` are moved, not copied.
(function clone(natives, util, defineGlobal, shared) {
  'use strict';
  const { DOMException } = shared;
  const ERRORS = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
  const TYPED = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
    Float32Array, Float64Array, BigInt64Array, BigUint64Array];
  if (typeof Float16Array === 'function') TYPED.push(Float16Array);
  // Objects with internal state that cannot be serialized.
  const UNCLONEABLE = [Promise, WeakMap, WeakSet, WeakRef, FinalizationRegistry];
  const ObjectProto = Object.prototype;
  const ArrayProto = Array.prototype;
  const refuse = (what) => new DOMException(what + ' could not be cloned.', 'DataCloneError');
  const describe = (v) => {
    const tag = Object.prototype.toString.call(v).slice(8, -1);
    return '#<' + (tag === 'Object' && v.constructor && v.constructor.name ? v.constructor.name : tag) + '>';
  };

  function structuredClone(value, options) {
    if (arguments.length === 0) {
      const e = new TypeError('The "value" argument must be specified');
      e.code = 'ERR_MISSING_ARGS';
      throw e;
    }
    const memo = new Map();
    const transfer = options !== undefined && options !== null ? options.transfer : undefined;
    const moving = [];
    if (transfer !== undefined) {
      for (const buffer of transfer) {
        if (!(buffer instanceof ArrayBuffer)) throw refuse(describe(buffer));
        if (moving.includes(buffer)) throw new DOMException('ArrayBuffer is marked as transferable twice', 'DataCloneError');
        moving.push(buffer);
      }
    }
    // Everything is cloned first and the transferred buffers detached last, so
    // a refusal leaves the caller's buffers as they were.
    const plain = (v, out) => {
      memo.set(v, out);
      for (const k of Object.keys(v)) out[k] = copy(v[k]);
      return out;
    };
    const copy = (v) => {
      if (v === null || (typeof v !== 'object' && typeof v !== 'function')) {
        if (typeof v === 'symbol') throw refuse(String(v));
        return v;
      }
      if (typeof v === 'function') throw refuse(Function.prototype.toString.call(v));
      const seen = memo.get(v);
      if (seen !== undefined) return seen;
      // The common shapes by their prototype first; subclasses and the rest
      // by their internal slots below.
      const proto = Object.getPrototypeOf(v);
      if (proto === ObjectProto) return plain(v, {});
      if (proto === ArrayProto) return plain(v, new Array(v.length));
      let out;
      if (v instanceof ArrayBuffer) {
        out = v.slice(0);
        memo.set(v, out);
        return out;
      }
      if (ArrayBuffer.isView(v)) {
        const buffer = copy(v.buffer);
        if (v instanceof DataView) out = new DataView(buffer, v.byteOffset, v.byteLength);
        else {
          const Ctor = TYPED.find((T) => v instanceof T);
          out = new Ctor(buffer, v.byteOffset, v.length);
        }
        memo.set(v, out);
        return out;
      }
      if (v instanceof Date) out = new Date(v.getTime());
      else if (v instanceof RegExp) out = new RegExp(v.source, v.flags);
      else if (v instanceof Boolean || v instanceof Number || v instanceof String || v instanceof BigInt) out = Object(v.valueOf());
      if (out !== undefined) { memo.set(v, out); return out; }
      if (v instanceof Map) {
        out = new Map();
        memo.set(v, out);
        for (const [k, val] of v) out.set(copy(k), copy(val));
        return out;
      }
      if (v instanceof Set) {
        out = new Set();
        memo.set(v, out);
        for (const val of v) out.add(copy(val));
        return out;
      }
      if (v instanceof Error) {
        const name = v.name;
        const Ctor = Object.hasOwn(ERRORS, name) ? ERRORS[name] : Error;
        out = Object.create(Ctor.prototype);
        memo.set(v, out);
        const message = Object.getOwnPropertyDescriptor(v, 'message');
        if (message !== undefined) Object.defineProperty(out, 'message', { value: String(v.message), writable: true, configurable: true, enumerable: false });
        if (typeof v.stack === 'string') Object.defineProperty(out, 'stack', { value: v.stack, writable: true, configurable: true, enumerable: false });
        if (Object.hasOwn(v, 'cause')) Object.defineProperty(out, 'cause', { value: copy(v.cause), writable: true, configurable: true, enumerable: false });
        return out;
      }
      if (UNCLONEABLE.some((T) => v instanceof T)) throw refuse(describe(v));
      return plain(v, Array.isArray(v) ? new Array(v.length) : {});
    };
    const result = copy(value);
    for (const buffer of moving) buffer.transfer(0); // detaches it
    return result;
  }
  defineGlobal('structuredClone', structuredClone, true);
})
