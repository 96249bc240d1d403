// plimsoll's util.inspect for the QuickJS guest: formats values the way Node's
// console does (depth 2, 80 columns, arrays grouped in columns, circular
// references marked). Evaluated once, before the snapshot; it returns a
// function that builds the formatter around the guest's promise-state native.
(function makeInspect(promiseState) {
  'use strict';
  const ObjectProto = Object.prototype;
  const hasOwn = (o, k) => ObjectProto.hasOwnProperty.call(o, k);
  const toStr = (o) => ObjectProto.toString.call(o);
  const CUSTOM = Symbol.for('nodejs.util.inspect.custom');

  // ---------------------------------------------------------------- inspect
  const IDENT = /^[a-zA-Z_][a-zA-Z_0-9]*$/;
  const META = { '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r', '\\': '\\\\' };

  function quote(s) {
    let q = "'";
    if (s.includes("'")) {
      if (!s.includes('"')) q = '"';
      else if (!s.includes('`') && !s.includes('${')) q = '`';
    }
    let out = '';
    for (const ch of s) {
      const c = ch.codePointAt(0);
      if (ch === q) out += '\\' + ch;
      else if (META[ch] !== undefined) out += META[ch];
      else if (c < 0x20 || c === 0x7f) out += '\\x' + c.toString(16).padStart(2, '0').toUpperCase();
      else if (c >= 0xd800 && c <= 0xdfff) out += '\\u' + c.toString(16);
      else out += ch;
    }
    return q + out + q;
  }

  function formatKey(k) {
    if (typeof k === 'symbol') return k.toString();
    return IDENT.test(k) ? k : quote(k);
  }

  function formatNumber(n) {
    return Object.is(n, -0) ? '-0' : String(n);
  }

  function formatPrimitive(v, top) {
    switch (typeof v) {
      case 'string': return top ? v : quote(v);
      case 'number': return formatNumber(v);
      case 'bigint': return String(v) + 'n';
      case 'boolean': return String(v);
      case 'undefined': return 'undefined';
      case 'symbol': return v.toString();
    }
    return v === null ? 'null' : undefined;
  }

  function constructorName(v) {
    let proto = Object.getPrototypeOf(v);
    while (proto !== null) {
      const d = Object.getOwnPropertyDescriptor(proto, 'constructor');
      if (d !== undefined && typeof d.value === 'function' && d.value.name !== '') return d.value.name;
      proto = Object.getPrototypeOf(proto);
    }
    return null;
  }

  function functionBase(f) {
    let src = '';
    try { src = Function.prototype.toString.call(f); } catch (e) { /* native */ }
    const name = f.name ? String(f.name) : '';
    if (src.startsWith('class') && /^class\s*[\s{A-Za-z_$]/.test(src)) {
      const base = Object.getPrototypeOf(f);
      const parent = typeof base === 'function' && base !== Function.prototype ? ' extends ' + (base.name || '(anonymous)') : '';
      return '[class ' + (name || '(anonymous)') + parent + ']';
    }
    let kind = 'Function';
    if (toStr(f) === '[object AsyncFunction]') kind = 'AsyncFunction';
    else if (toStr(f) === '[object GeneratorFunction]') kind = 'GeneratorFunction';
    else if (toStr(f) === '[object AsyncGeneratorFunction]') kind = 'AsyncGeneratorFunction';
    return '[' + kind + (name ? ': ' + name : ' (anonymous)') + ']';
  }

  function errorBase(e) {
    let stack = '';
    try { stack = e.stack; } catch (x) { /* getter threw */ }
    let head = '';
    try { head = Error.prototype.toString.call(e); } catch (x) { head = '[object Error]'; }
    if (typeof stack !== 'string' || stack === '') return '[' + head + ']';
    // QuickJS's stack holds only frames; Node's starts with "Name: message".
    if (!stack.startsWith(head)) stack = head + (stack.startsWith('\n') ? '' : '\n') + stack;
    // Frames inside the prelude and this formatter are plimsoll's, not the snippet's.
    stack = stack.split('\n').filter((line) => !line.includes('(plimsoll:')).join('\n').replace(/\n+$/, '');
    return stack.includes('\n    at') ? stack : '[' + stack + ']';
  }

  function isBelowBreakLength(ctx, output, start, base) {
    let total = output.length + start;
    if (total + output.length > ctx.breakLength) return false;
    for (let i = 0; i < output.length; i++) {
      total += output[i].length;
      if (total > ctx.breakLength) return false;
    }
    return base === '' || !base.includes('\n');
  }

  // Node's groupArrayElements: long arrays of short entries go in columns.
  function groupArrayElements(ctx, output, value, extra) {
    let totalLength = 0;
    let maxLength = 0;
    let outputLength = output.length;
    if (extra) outputLength--;
    const dataLen = new Array(outputLength);
    for (let i = 0; i < outputLength; i++) {
      const len = output[i].length;
      dataLen[i] = len;
      totalLength += len + 2;
      if (maxLength < len) maxLength = len;
    }
    const actualMax = maxLength + 2;
    if (actualMax * 3 + ctx.indentationLvl < ctx.breakLength &&
        (totalLength / actualMax > 5 || maxLength <= 6)) {
      const averageBias = Math.sqrt(actualMax - totalLength / output.length);
      const biasedMax = Math.max(actualMax - 3 - averageBias, 1);
      const columns = Math.min(
        Math.round(Math.sqrt(2.5 * biasedMax * outputLength) / biasedMax),
        Math.floor((ctx.breakLength - ctx.indentationLvl) / actualMax),
        ctx.compact * 4,
        15);
      if (columns <= 1) return output;
      const tmp = [];
      const maxLineLength = [];
      for (let i = 0; i < columns; i++) {
        let lineLength = 0;
        for (let j = i; j < output.length; j += columns) {
          if (dataLen[j] > lineLength) lineLength = dataLen[j];
        }
        maxLineLength.push(lineLength + 2);
      }
      let padStart = true;
      if (value !== undefined) {
        for (let i = 0; i < output.length; i++) {
          if (typeof value[i] !== 'number' && typeof value[i] !== 'bigint') { padStart = false; break; }
        }
      }
      for (let i = 0; i < outputLength; i += columns) {
        const max = Math.min(i + columns, outputLength);
        let str = '';
        let j = i;
        for (; j < max - 1; j++) {
          const cell = output[j] + ', ';
          str += padStart ? cell.padStart(maxLineLength[j - i], ' ') : cell.padEnd(maxLineLength[j - i], ' ');
        }
        str += padStart ? output[j].padStart(maxLineLength[j - i] - 2, ' ') : output[j];
        tmp.push(str);
      }
      if (extra) tmp.push(output[outputLength]);
      return tmp;
    }
    return output;
  }

  function reduceToSingleString(ctx, output, base, braces, isArray, recurseTimes, value) {
    const entries = output.length;
    if (isArray && entries > 6) output = groupArrayElements(ctx, output, value, value !== undefined && value.length > 100);
    if (ctx.currentDepth - recurseTimes < ctx.compact && entries === output.length) {
      const start = output.length + ctx.indentationLvl + braces[0].length + base.length + 10;
      if (isBelowBreakLength(ctx, output, start, base)) {
        const joined = output.join(', ');
        if (!joined.includes('\n')) {
          return (base ? base + ' ' : '') + braces[0] + ' ' + joined + ' ' + braces[1];
        }
      }
    }
    const ind = '\n' + ' '.repeat(ctx.indentationLvl);
    return (base ? base + ' ' : '') + braces[0] + ind + '  ' + output.join(',' + ind + '  ') + ind + braces[1];
  }

  function formatProperty(ctx, value, recurseTimes, key, isArrayIndex) {
    const desc = Object.getOwnPropertyDescriptor(value, key) || { value: value[key], enumerable: true };
    let str;
    if (desc.value !== undefined || !('get' in desc || 'set' in desc)) {
      ctx.indentationLvl += 2;
      str = formatValue(ctx, desc.value, recurseTimes, false);
      ctx.indentationLvl -= 2;
    } else if (desc.get !== undefined) {
      str = desc.set !== undefined ? '[Getter/Setter]' : '[Getter]';
    } else {
      str = desc.set !== undefined ? '[Setter]' : 'undefined';
    }
    if (isArrayIndex) return str;
    return formatKey(key) + ': ' + str;
  }

  function ownKeys(v, skipIndices) {
    const keys = [];
    for (const k of Object.keys(v)) {
      if (skipIndices && String(k >>> 0) === k && (k >>> 0) !== 0xffffffff) continue;
      keys.push(k);
    }
    for (const s of Object.getOwnPropertySymbols(v)) {
      const d = Object.getOwnPropertyDescriptor(v, s);
      if (d && d.enumerable) keys.push(s);
    }
    return keys;
  }

  function formatValue(ctx, v, recurseTimes, top) {
    if (typeof v === 'string' && !top && v.length > 16 && v.length > ctx.breakLength - ctx.indentationLvl - 4) {
      // As Node: a long string is shown line by line, joined with +.
      return v.split(/(?<=\n)/).map(quote).join(' +\n' + ' '.repeat(ctx.indentationLvl + 2));
    }
    if (v === null || (typeof v !== 'object' && typeof v !== 'function')) {
      return formatPrimitive(v, top);
    }
    if (ctx.seen.includes(v)) {
      let index = ctx.circular.get(v);
      if (index === undefined) {
        index = ctx.circular.size + 1;
        ctx.circular.set(v, index);
      }
      return '[Circular *' + index + ']';
    }
    // Node's custom inspection hook (Buffer, URL and URLSearchParams use it).
    const custom = v[CUSTOM];
    if (typeof custom === 'function' && custom !== inspect) {
      const shown = custom.call(v, ctx.depth - recurseTimes, { depth: ctx.depth - recurseTimes }, inspect);
      if (shown !== v) {
        if (typeof shown !== 'string') return formatValue(ctx, shown, recurseTimes, false);
        return ctx.indentationLvl === 0 ? shown : shown.split('\n').join('\n' + ' '.repeat(ctx.indentationLvl));
      }
    }
    return formatRaw(ctx, v, recurseTimes);
  }

  // Whether `v` has the collection's internal slots (a Proxy of one does not).
  function holds(Collection, v) {
    try { Collection.prototype.has.call(v, undefined); return true; } catch (e) { return false; }
  }

  function formatRaw(ctx, v, recurseTimes) {
    let keys;
    let base = '';
    let braces;
    let isArray = false;
    let extras = null; // a function producing the leading entries
    const name = constructorName(v);
    // As Node: a tag that is the object's own enumerable property is just a key.
    const tag = ObjectProto.propertyIsEnumerable.call(v, Symbol.toStringTag) ? '' : v[Symbol.toStringTag];
    const prefix = (fallback, size) => {
      let p = name === null ? '[' + fallback + ': null prototype]' : name;
      if (size !== undefined) p += '(' + size + ')';
      if (typeof tag === 'string' && tag !== '' && tag !== name) p += ' [' + tag + ']';
      return p + ' ';
    };

    if (Array.isArray(v)) {
      isArray = true;
      keys = ownKeys(v, true);
      const p = prefix('Array', v.length);
      braces = [(p === 'Array(' + v.length + ') ' ? '' : p) + '[', ']'];
      if (v.length === 0 && keys.length === 0) return braces[0] + ']';
      extras = () => formatArrayish(ctx, v, recurseTimes, v.length);
    } else if (v instanceof DataView) {
      keys = ownKeys(v, false);
      braces = [prefix('DataView') + '{', '}'];
      extras = () => {
        ctx.indentationLvl += 2;
        const buffer = formatValue(ctx, v.buffer, recurseTimes, false);
        ctx.indentationLvl -= 2;
        return ['byteLength: ' + v.byteLength, 'byteOffset: ' + v.byteOffset, 'buffer: ' + buffer];
      };
    } else if (ArrayBuffer.isView(v)) {
      isArray = true;
      keys = ownKeys(v, true);
      braces = [prefix('TypedArray', v.length) + '[', ']'];
      if (v.length === 0 && keys.length === 0) return braces[0] + ']';
      extras = () => formatArrayish(ctx, v, recurseTimes, v.length);
    } else if (v instanceof Map && holds(Map, v)) {
      keys = ownKeys(v, false);
      braces = [prefix('Map', v.size) + '{', '}'];
      if (v.size === 0 && keys.length === 0) return braces[0] + '}';
      extras = () => {
        const out = [];
        ctx.indentationLvl += 2;
        for (const [k, val] of v) {
          out.push(formatValue(ctx, k, recurseTimes, false) + ' => ' + formatValue(ctx, val, recurseTimes, false));
        }
        ctx.indentationLvl -= 2;
        return out;
      };
    } else if (v instanceof Set && holds(Set, v)) {
      keys = ownKeys(v, false);
      braces = [prefix('Set', v.size) + '{', '}'];
      if (v.size === 0 && keys.length === 0) return braces[0] + '}';
      extras = () => {
        const out = [];
        ctx.indentationLvl += 2;
        for (const val of v) out.push(formatValue(ctx, val, recurseTimes, false));
        ctx.indentationLvl -= 2;
        return out;
      };
    } else {
      keys = ownKeys(v, false);
      braces = ['{', '}'];
      if (typeof v === 'function') {
        base = functionBase(v);
        if (keys.length === 0) return base;
      } else if (v instanceof Error) {
        base = errorBase(v);
        if (ctx.indentationLvl !== 0) base = base.split('\n').join('\n' + ' '.repeat(ctx.indentationLvl));
        // As Node: name, message and stack are left out when the stack shows them.
        keys = keys.filter((k) => !((k === 'name' || k === 'message' || k === 'stack') &&
          typeof v[k] === 'string' && base.includes(v[k])));
        for (const hidden of ['cause', 'errors']) {
          const d = Object.getOwnPropertyDescriptor(v, hidden);
          if (d !== undefined && !d.enumerable) {
            const prev = extras;
            extras = () => {
              const out = prev ? prev() : [];
              ctx.indentationLvl += 2;
              out.push('[' + hidden + ']: ' + formatValue(ctx, d.value, recurseTimes, false));
              ctx.indentationLvl -= 2;
              return out;
            };
          }
        }
        if (keys.length === 0 && extras === null) return base;
      } else if (v instanceof RegExp) {
        base = RegExp.prototype.toString.call(v);
        if (keys.length === 0) return base;
      } else if (v instanceof Date) {
        base = isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString();
        if (keys.length === 0) return base;
      } else if (v instanceof Promise) {
        const [state, result] = promiseState(v);
        braces = [prefix('Promise') + '{', '}'];
        extras = () => {
          if (state === 'pending') return ['<pending>'];
          ctx.indentationLvl += 2;
          const r = formatValue(ctx, result, recurseTimes, false);
          ctx.indentationLvl -= 2;
          return [state === 'rejected' ? '<rejected> ' + r : r];
        };
      } else if (v instanceof WeakMap || v instanceof WeakSet) {
        return prefix(v instanceof WeakMap ? 'WeakMap' : 'WeakSet') + '{ <items unknown> }';
      } else if (v instanceof ArrayBuffer) {
        const bytes = new Uint8Array(v);
        let hex = [];
        for (let i = 0; i < Math.min(bytes.length, 100); i++) hex.push(bytes[i].toString(16).padStart(2, '0'));
        const more = bytes.length > 100 ? ' ... ' + (bytes.length - 100) + ' more byte' + (bytes.length - 100 > 1 ? 's' : '') : '';
        braces = [prefix('ArrayBuffer') + '{', '}'];
        extras = () => ['[Uint8Contents]: <' + hex.join(' ') + more + '>', '[byteLength]: ' + v.byteLength];
      } else if (v instanceof Number || v instanceof String || v instanceof Boolean ||
                 (typeof BigInt === 'function' && v instanceof BigInt) || v instanceof Symbol) {
        const prim = v.valueOf();
        const kind = typeof prim === 'bigint' ? 'BigInt' : typeof prim === 'symbol' ? 'Symbol'
          : typeof prim === 'number' ? 'Number' : typeof prim === 'string' ? 'String' : 'Boolean';
        base = '[' + kind + ': ' + formatPrimitive(prim, false) + ']';
        if (typeof prim === 'string') keys = keys.filter((k) => !(String(k >>> 0) === k));
        if (keys.length === 0) return base;
      } else {
        if (name === 'Object' && toStr(v) === '[object Arguments]') {
          braces[0] = '[Arguments] {';
        } else if (name === 'Object') {
          if (typeof tag === 'string' && tag !== '') braces[0] = 'Object [' + tag + '] {';
        } else {
          braces[0] = prefix('Object') + '{';
        }
        if (keys.length === 0) return braces[0] + '}';
      }
    }

    if (recurseTimes > ctx.depth) {
      if (typeof v === 'function' || v instanceof Error) return base;
      return '[' + (name === null ? 'Object: null prototype' : isArray && Array.isArray(v) ? 'Array' : name) + ']';
    }
    recurseTimes += 1;
    ctx.seen.push(v);
    ctx.currentDepth = recurseTimes;
    let output;
    try {
      output = extras ? extras() : [];
      for (const k of keys) output.push(formatProperty(ctx, v, recurseTimes, k, false));
    } finally {
      ctx.seen.pop();
    }
    const index = ctx.circular.get(v);
    if (index !== undefined) {
      const ref = '<ref *' + index + '>';
      base = base === '' ? ref : ref + ' ' + base;
    }
    if (v instanceof Error && base.includes('\n') && output.length > 0) {
      return base + ' {' + '\n' + ' '.repeat(ctx.indentationLvl + 2) +
        output.join(',\n' + ' '.repeat(ctx.indentationLvl + 2)) + '\n' + ' '.repeat(ctx.indentationLvl) + '}';
    }
    return reduceToSingleString(ctx, output, base, braces, isArray, recurseTimes, isArray ? v : undefined);
  }

  function formatArrayish(ctx, v, recurseTimes, length) {
    const out = [];
    const shown = Math.min(length, 100);
    let holes = 0;
    const flushHoles = () => {
      if (holes > 0) out.push('<' + holes + ' empty item' + (holes > 1 ? 's' : '') + '>');
      holes = 0;
    };
    for (let i = 0; i < shown; i++) {
      if (!hasOwn(v, i)) { holes++; continue; }
      flushHoles();
      out.push(formatProperty(ctx, v, recurseTimes, String(i), true));
    }
    flushHoles();
    if (length > shown) {
      const rest = length - shown;
      out.push('... ' + rest + ' more item' + (rest > 1 ? 's' : ''));
    }
    return out;
  }

  function inspect(value, options) {
    const ctx = {
      depth: 2, breakLength: 80, compact: 3, indentationLvl: 0, currentDepth: 0,
      seen: [], circular: new Map(),
    };
    if (options && typeof options === 'object') {
      if (options.depth === null) ctx.depth = Infinity;
      else if (typeof options.depth === 'number') ctx.depth = options.depth;
    }
    return formatValue(ctx, value, 0, false);
  }

  return { inspect, formatValue, formatPrimitive, formatNumber, errorBase };
})
