// URL and URLSearchParams (WHATWG URL). Parsing, serialising and every setter
// are the `url` crate's (its `quirks` module is the WHATWG API), through the
// guest's natives; form encoding is `form_urlencoded`'s. A URL's
// searchParams and its query stay one: each updates the other.
(function url(natives, util, defineGlobal, shared) {
  'use strict';
  const { urlParse, urlSet, formParse, formSerialize } = natives;
  const { invalidArg } = shared;
  const FIELDS = ['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash', 'origin'];
  const INDEX = Object.fromEntries(FIELDS.map((f, i) => [f, i]));
  const usv = (v) => String(v).toWellFormed();
  const CUSTOM = Symbol.for('nodejs.util.inspect.custom');

  function invalidUrl(input, base) {
    const e = new TypeError('Invalid URL');
    e.code = 'ERR_INVALID_URL';
    e.input = input;
    if (base !== undefined) e.base = base;
    return e;
  }

  const owners = new WeakMap(); // URLSearchParams -> the URL whose query it is
  const lists = new WeakMap(); // URLSearchParams -> [[name, value]]
  const urls = new WeakMap(); // URL -> { parts, params }

  class URLSearchParams {
    constructor(init = '') {
      const list = [];
      lists.set(this, list);
      if (init !== null && (typeof init === 'object' || typeof init === 'function')) {
        const iter = init[Symbol.iterator];
        if (iter !== undefined && iter !== null) {
          if (typeof iter !== 'function') throw new TypeError('Query pairs must be iterable');
          for (const pair of init) {
            if (pair === null || typeof pair !== 'object' || typeof pair[Symbol.iterator] !== 'function') {
              throw new TypeError('Each query pair must be an iterable [name, value] tuple');
            }
            const p = [...pair];
            if (p.length !== 2) throw new TypeError('Each query pair must be an iterable [name, value] tuple');
            list.push([usv(p[0]), usv(p[1])]);
          }
        } else {
          for (const k of Reflect.ownKeys(init)) {
            if (typeof k !== 'string' || !Object.prototype.propertyIsEnumerable.call(init, k)) continue;
            list.push([usv(k), usv(init[k])]);
          }
        }
      } else {
        let s = usv(init);
        if (s.startsWith('?')) s = s.slice(1);
        parseInto(list, s);
      }
    }
    get size() { return lists.get(this).length; }
    append(name, value) {
      if (arguments.length < 2) throw invalidArg('name" and "value', 'specified', undefined);
      lists.get(this).push([usv(name), usv(value)]);
      update(this);
    }
    delete(name, value) {
      name = usv(name);
      const list = lists.get(this);
      const v = value === undefined ? undefined : usv(value);
      for (let i = list.length - 1; i >= 0; i--) {
        if (list[i][0] === name && (v === undefined || list[i][1] === v)) list.splice(i, 1);
      }
      update(this);
    }
    get(name) {
      name = usv(name);
      const hit = lists.get(this).find((p) => p[0] === name);
      return hit === undefined ? null : hit[1];
    }
    getAll(name) {
      name = usv(name);
      return lists.get(this).filter((p) => p[0] === name).map((p) => p[1]);
    }
    has(name, value) {
      name = usv(name);
      const v = value === undefined ? undefined : usv(value);
      return lists.get(this).some((p) => p[0] === name && (v === undefined || p[1] === v));
    }
    set(name, value) {
      name = usv(name);
      value = usv(value);
      const list = lists.get(this);
      const first = list.findIndex((p) => p[0] === name);
      if (first < 0) list.push([name, value]);
      else {
        list[first][1] = value;
        for (let i = list.length - 1; i > first; i--) if (list[i][0] === name) list.splice(i, 1);
      }
      update(this);
    }
    sort() {
      // Stable, by UTF-16 code units of the names.
      lists.get(this).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      update(this);
    }
    forEach(callback, thisArg) {
      if (typeof callback !== 'function') throw invalidArg('callback', 'of type function', callback);
      const list = lists.get(this);
      for (let i = 0; i < list.length; i++) callback.call(thisArg, list[i][1], list[i][0], this);
    }
    *entries() { const list = lists.get(this); for (let i = 0; i < list.length; i++) yield [list[i][0], list[i][1]]; }
    *keys() { for (const [k] of this.entries()) yield k; }
    *values() { for (const [, v] of this.entries()) yield v; }
    toString() { return formSerialize(lists.get(this).flat()); }
    [CUSTOM](depth, options, inspect) {
      const list = lists.get(this);
      if (list.length === 0) return 'URLSearchParams {}';
      return 'URLSearchParams { ' + list.map(([k, v]) => inspect(k) + ' => ' + inspect(v)).join(', ') + ' }';
    }
  }
  URLSearchParams.prototype[Symbol.iterator] = URLSearchParams.prototype.entries;
  Object.defineProperty(URLSearchParams.prototype, Symbol.toStringTag, { value: 'URLSearchParams', configurable: true });
  function parseInto(list, s) {
    list.length = 0;
    const flat = formParse(s);
    for (let i = 0; i < flat.length; i += 2) list.push([flat[i], flat[i + 1]]);
  }
  // The URL's query follows its searchParams (URL's "update steps").
  function update(params) {
    const owner = owners.get(params);
    if (owner === undefined) return;
    const u = urls.get(owner);
    u.parts = urlSet(u.parts[0], 'search', params.toString()) ?? u.parts;
  }

  class URL {
    constructor(input, base) {
      if (arguments.length === 0) throw invalidArg('url', 'specified', undefined);
      input = usv(input);
      base = base === undefined ? undefined : usv(base);
      const parts = urlParse(input, base);
      if (parts === null || parts === undefined) throw invalidUrl(input, base);
      const params = new URLSearchParams(parts[INDEX.search]);
      owners.set(params, this);
      urls.set(this, { parts, params });
    }
    static canParse(input, base) {
      const parts = urlParse(usv(input), base === undefined ? undefined : usv(base));
      return parts !== null && parts !== undefined;
    }
    static parse(input, base) {
      try { return new URL(input, base); } catch { return null; }
    }
    get searchParams() { return urls.get(this).params; }
    toString() { return urls.get(this).parts[0]; }
    toJSON() { return urls.get(this).parts[0]; }
    [CUSTOM](depth, options, inspect) {
      if (depth < 0) return '[URL]';
      const obj = {};
      for (const f of ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search']) obj[f] = this[f];
      obj.searchParams = this.searchParams;
      obj.hash = this.hash;
      return 'URL ' + inspect(obj, { ...options, depth });
    }
  }
  for (const field of FIELDS) {
    const desc = { get() { return urls.get(this).parts[INDEX[field]]; }, enumerable: true, configurable: true };
    if (field === 'href') {
      desc.set = function (v) {
        const parts = urlParse(usv(v));
        if (parts === null || parts === undefined) throw invalidUrl(usv(v));
        const u = urls.get(this);
        u.parts = parts;
        parseInto(lists.get(u.params), parts[INDEX.search].slice(1));
      };
    } else if (field !== 'origin') {
      desc.set = function (v) {
        const u = urls.get(this);
        u.parts = urlSet(u.parts[0], field, usv(v)) ?? u.parts;
        if (field === 'search') parseInto(lists.get(u.params), u.parts[INDEX.search].slice(1));
      };
    }
    Object.defineProperty(URL.prototype, field, desc);
  }
  Object.defineProperty(URL.prototype, Symbol.toStringTag, { value: 'URL', configurable: true });

  defineGlobal('URL', URL, false);
  defineGlobal('URLSearchParams', URLSearchParams, false);
})
