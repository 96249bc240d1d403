// Web Crypto, as far as it goes without keys that leave the run: the `crypto`
// global with getRandomValues and randomUUID (randomness read from WASI per
// call, never from before the snapshot), and crypto.subtle's digest
// (SHA-1/256/384/512) and HMAC (importKey, generateKey, exportKey, sign,
// verify). Any other algorithm is a NotSupportedError, as WebCrypto says.
(function crypto(natives, util, defineGlobal, shared) {
  'use strict';
  const { randomBytes, digest: nativeDigest, hmac } = natives;
  const { DOMException, bytesOf, invalidArg } = shared;
  const CONSTRUCT = Symbol('plimsoll:construct');
  const INTEGER_ARRAYS = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
    BigInt64Array, BigUint64Array];
  const HASHES = new Map([['SHA-1', 512], ['SHA-256', 512], ['SHA-384', 1024], ['SHA-512', 1024]]); // name -> block bits

  function getRandomValues(view) {
    if (!INTEGER_ARRAYS.some((T) => view instanceof T)) {
      if (!ArrayBuffer.isView(view)) throw invalidArg('typedArray', 'an instance of Int8Array, Int16Array, Int32Array, Uint8Array, Uint16Array, Uint32Array, or Uint8ClampedArray', view);
      throw new DOMException('The data argument must be an integer-type TypedArray', 'TypeMismatchError');
    }
    if (view.byteLength > 65536) throw new DOMException('The requested length exceeds 65,536 bytes', 'QuotaExceededError');
    new Uint8Array(view.buffer, view.byteOffset, view.byteLength).set(new Uint8Array(randomBytes(view.byteLength)));
    return view;
  }
  const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
  function randomUUID() {
    const b = new Uint8Array(randomBytes(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let s = '';
    for (let i = 0; i < 16; i++) s += (i === 4 || i === 6 || i === 8 || i === 10 ? '-' : '') + HEX[b[i]];
    return s;
  }

  // WebCrypto's algorithm normalisation, for the names this tier knows.
  function algorithmName(alg, known) {
    const name = typeof alg === 'string' ? alg : alg !== null && typeof alg === 'object' ? alg.name : undefined;
    if (typeof name !== 'string') throw new TypeError('Algorithm: name is required');
    const found = known.find((k) => k.toUpperCase() === name.toUpperCase());
    if (found === undefined) throw new DOMException('Unrecognized algorithm name', 'NotSupportedError');
    return found;
  }
  const hashName = (h) => algorithmName(h, [...HASHES.keys()]);
  const copyOf = (data) => { const b = bytesOf(data, 'data'); return b.slice().buffer; };

  const keys = new WeakMap(); // CryptoKey -> { material, algorithm, extractable, usages }
  class CryptoKey {
    constructor(key) { if (key !== CONSTRUCT) throw new TypeError('Illegal constructor'); }
    get type() { return 'secret'; }
    get extractable() { return keys.get(this).extractable; }
    get algorithm() { return keys.get(this).algorithm; }
    get usages() { return keys.get(this).usages; }
  }
  Object.defineProperty(CryptoKey.prototype, Symbol.toStringTag, { value: 'CryptoKey', configurable: true });
  function hmacKey(material, algorithm, extractable, usages) {
    const hash = hashName(algorithm.hash);
    const wanted = [...usages];
    for (const u of wanted) {
      if (u !== 'sign' && u !== 'verify') throw new DOMException('Unsupported key usage for an HMAC key', 'SyntaxError');
    }
    if (wanted.length === 0) throw new DOMException('Usages cannot be empty when creating a key.', 'SyntaxError');
    const length = algorithm.length === undefined ? material.byteLength * 8 : Number(algorithm.length);
    if (length === 0 || length > material.byteLength * 8 || length <= material.byteLength * 8 - 8) {
      throw new DOMException('Invalid key length', 'DataError');
    }
    const key = new CryptoKey(CONSTRUCT);
    keys.set(key, {
      material, extractable: !!extractable, usages: [...new Set(wanted)],
      algorithm: { name: 'HMAC', length, hash: { name: hash } },
    });
    return key;
  }
  function usableFor(key, usage) {
    if (!(key instanceof CryptoKey)) throw invalidArg('key', 'an instance of CryptoKey', key);
    const k = keys.get(key);
    if (!k.usages.includes(usage)) throw new DOMException('Unable to use this key to ' + usage, 'InvalidAccessError');
    return k;
  }
  const sign = (k, data) => {
    const b = bytesOf(data, 'data');
    return hmac(k.algorithm.hash.name, k.material, b.buffer, b.byteOffset, b.byteLength);
  };

  class SubtleCrypto {
    constructor(key) { if (key !== CONSTRUCT) throw new TypeError('Illegal constructor'); }
    async digest(algorithm, data) {
      const name = hashName(algorithm);
      const b = bytesOf(data, 'data');
      return nativeDigest(name, b.buffer, b.byteOffset, b.byteLength);
    }
    async importKey(format, keyData, algorithm, extractable, usages) {
      algorithmName(algorithm, ['HMAC']);
      let material;
      if (format === 'raw') material = copyOf(keyData);
      else if (format === 'jwk') {
        if (keyData === null || typeof keyData !== 'object' || keyData.kty !== 'oct' || typeof keyData.k !== 'string') {
          throw new DOMException('Invalid keyData', 'DataError');
        }
        material = Uint8Array.fromBase64(keyData.k, { alphabet: 'base64url' }).buffer;
      } else throw new DOMException('Unable to import HMAC key with format ' + format, 'NotSupportedError');
      return hmacKey(material, algorithm, extractable, usages);
    }
    async generateKey(algorithm, extractable, usages) {
      algorithmName(algorithm, ['HMAC']);
      const bits = algorithm.length === undefined ? HASHES.get(hashName(algorithm.hash)) : Number(algorithm.length);
      const material = randomBytes(Math.ceil(bits / 8));
      return hmacKey(material, { ...algorithm, length: bits }, extractable, usages);
    }
    async exportKey(format, key) {
      if (!(key instanceof CryptoKey)) throw invalidArg('key', 'an instance of CryptoKey', key);
      const k = keys.get(key);
      if (!k.extractable) throw new DOMException('key is not extractable', 'InvalidAccessError');
      if (format === 'raw') return k.material.slice(0);
      if (format === 'jwk') {
        return {
          kty: 'oct', k: new Uint8Array(k.material).toBase64({ alphabet: 'base64url', omitPadding: true }),
          alg: 'HS' + k.algorithm.hash.name.slice(4), key_ops: [...k.usages], ext: true,
        };
      }
      throw new DOMException('Unable to export a raw HMAC key with format ' + format, 'NotSupportedError');
    }
    async sign(algorithm, key, data) {
      algorithmName(algorithm, ['HMAC']);
      return sign(usableFor(key, 'sign'), data);
    }
    async verify(algorithm, key, signature, data) {
      algorithmName(algorithm, ['HMAC']);
      const expected = new Uint8Array(sign(usableFor(key, 'verify'), data));
      const given = bytesOf(signature, 'signature');
      if (given.length !== expected.length) return false;
      let diff = 0;
      for (let i = 0; i < expected.length; i++) diff |= expected[i] ^ given[i];
      return diff === 0;
    }
  }
  Object.defineProperty(SubtleCrypto.prototype, Symbol.toStringTag, { value: 'SubtleCrypto', configurable: true });

  const subtle = new SubtleCrypto(CONSTRUCT);
  class Crypto {
    constructor(key) { if (key !== CONSTRUCT) throw new TypeError('Illegal constructor'); }
    get subtle() { return subtle; }
    getRandomValues(view) { return getRandomValues(view); }
    randomUUID() { return randomUUID(); }
  }
  Object.defineProperty(Crypto.prototype, Symbol.toStringTag, { value: 'Crypto', configurable: true });

  defineGlobal('crypto', new Crypto(CONSTRUCT), true);
  for (const c of [Crypto, CryptoKey, SubtleCrypto]) defineGlobal(c.name, c, false);
})
