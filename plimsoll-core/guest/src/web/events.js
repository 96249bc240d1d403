// DOMException, Event, CustomEvent, EventTarget, AbortController and
// AbortSignal, as Node defines them (WHATWG DOM, without a tree: an event is
// dispatched at its target only). A listener that throws does not stop the
// others; its error is rethrown from a microtask, which ends the run as an
// uncaught exception, as in Node.
(function events(natives, util, defineGlobal, shared) {
  'use strict';
  const CODES = {
    IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
    NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11,
    SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
    TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20, URLMismatchError: 21,
    QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24, DataCloneError: 25,
  };
  class DOMException extends Error {
    #name;
    constructor(message = '', options = 'Error') {
      super(String(message));
      if (options !== null && typeof options === 'object') {
        this.#name = 'name' in options ? String(options.name) : 'Error';
        if ('cause' in options) {
          Object.defineProperty(this, 'cause', { value: options.cause, writable: true, configurable: true, enumerable: false });
        }
      } else {
        this.#name = String(options);
      }
    }
    get name() { return this.#name; }
    get code() { return CODES[this.#name] ?? 0; }
  }
  Object.defineProperty(DOMException.prototype, Symbol.toStringTag, { value: 'DOMException', configurable: true });
  for (const [name, code] of Object.entries(CODES)) {
    const constant = name.replace(/Error$/, '').replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase() + '_ERR';
    Object.defineProperty(DOMException, constant, { value: code, enumerable: true });
    Object.defineProperty(DOMException.prototype, constant, { value: code, enumerable: true });
  }

  const invalidArg = (what, expected, v) => {
    const got = v === null || v === undefined ? 'Received ' + v
      : typeof v === 'object' || typeof v === 'function' ? 'Received an instance of ' + ((v.constructor && v.constructor.name) || 'Object')
        : 'Received type ' + typeof v + ' (' + util.inspect(v) + ')';
    const e = new TypeError('The "' + what + '" argument must be ' + expected + '. ' + got);
    e.code = 'ERR_INVALID_ARG_TYPE';
    return e;
  };

  // --------------------------------------------------------------- Event
  const state = new WeakMap(); // event -> its dispatch state
  const now = () => performance.now();
  class Event {
    constructor(type, init) {
      if (arguments.length === 0) throw invalidArg('type', 'specified', undefined);
      const o = init === undefined || init === null ? {} : init;
      if (typeof o !== 'object') throw invalidArg('options', 'of type object', init);
      state.set(this, {
        type: String(type), bubbles: !!o.bubbles, cancelable: !!o.cancelable, composed: !!o.composed,
        defaultPrevented: false, target: null, currentTarget: null, phase: 0, stop: false,
        stopNow: false, passive: false, dispatching: false, timeStamp: now(),
      });
    }
    get type() { return state.get(this).type; }
    get bubbles() { return state.get(this).bubbles; }
    get cancelable() { return state.get(this).cancelable; }
    get composed() { return state.get(this).composed; }
    get defaultPrevented() { const s = state.get(this); return s.cancelable && s.defaultPrevented; }
    get returnValue() { return !this.defaultPrevented; }
    get target() { return state.get(this).target; }
    get currentTarget() { return state.get(this).currentTarget; }
    get srcElement() { return state.get(this).target; }
    get eventPhase() { return state.get(this).phase; }
    get timeStamp() { return state.get(this).timeStamp; }
    get isTrusted() { return false; }
    get cancelBubble() { return state.get(this).stop; }
    set cancelBubble(v) { if (v) state.get(this).stop = true; }
    composedPath() { const s = state.get(this); return s.dispatching ? [s.currentTarget] : []; }
    preventDefault() { const s = state.get(this); if (!s.passive) s.defaultPrevented = true; }
    stopPropagation() { state.get(this).stop = true; }
    stopImmediatePropagation() { const s = state.get(this); s.stop = true; s.stopNow = true; }
  }
  const PHASES = { NONE: 0, CAPTURING_PHASE: 1, AT_TARGET: 2, BUBBLING_PHASE: 3 };
  for (const [k, v] of Object.entries(PHASES)) {
    Object.defineProperty(Event, k, { value: v, enumerable: true });
    Object.defineProperty(Event.prototype, k, { value: v, enumerable: true });
  }
  Object.defineProperty(Event.prototype, Symbol.toStringTag, { value: 'Event', configurable: true });

  class CustomEvent extends Event {
    #detail;
    constructor(type, init) {
      super(type, init);
      this.#detail = init && typeof init === 'object' && init.detail !== undefined ? init.detail : null;
    }
    get detail() { return this.#detail; }
  }
  Object.defineProperty(CustomEvent.prototype, Symbol.toStringTag, { value: 'CustomEvent', configurable: true });

  // --------------------------------------------------------- EventTarget
  const registry = new WeakMap(); // target -> Map(type -> [listener])
  const flags = (options) => options === null || options === undefined ? {}
    : typeof options === 'boolean' ? { capture: options } : options;
  class EventTarget {
    addEventListener(type, callback, options) {
      if (arguments.length < 2) throw invalidArg('listener', 'specified', undefined);
      if (callback === null || callback === undefined) return;
      if (typeof callback !== 'function' && typeof callback !== 'object') throw invalidArg('listener', 'an instance of EventListener', callback);
      const o = flags(options);
      const signal = o.signal;
      if (signal !== undefined && !(signal instanceof AbortSignal)) throw invalidArg('options.signal', 'an instance of AbortSignal', signal);
      if (signal && signal.aborted) return;
      let byType = registry.get(this);
      if (byType === undefined) registry.set(this, byType = new Map());
      type = String(type);
      let list = byType.get(type);
      if (list === undefined) byType.set(type, list = []);
      const capture = !!o.capture;
      if (list.some((l) => l.callback === callback && l.capture === capture)) return;
      list.push({ callback, capture, once: !!o.once, passive: !!o.passive, removed: false });
      if (signal) signal.addEventListener('abort', () => this.removeEventListener(type, callback, { capture }), { once: true });
    }
    removeEventListener(type, callback, options) {
      const list = registry.get(this)?.get(String(type));
      if (list === undefined) return;
      const capture = !!flags(options).capture;
      const i = list.findIndex((l) => l.callback === callback && l.capture === capture);
      if (i >= 0) { list[i].removed = true; list.splice(i, 1); }
    }
    dispatchEvent(event) {
      if (!(event instanceof Event)) throw invalidArg('event', 'an instance of Event', event);
      const s = state.get(event);
      if (s.dispatching) throw new DOMException('The event is already being dispatched', 'InvalidStateError');
      s.dispatching = true;
      s.target = this;
      s.currentTarget = this;
      s.phase = 2;
      const list = registry.get(this)?.get(s.type);
      try {
        for (const l of list ? [...list] : []) {
          if (l.removed) continue;
          if (l.once) this.removeEventListener(s.type, l.callback, { capture: l.capture });
          s.passive = l.passive;
          try {
            if (typeof l.callback === 'function') Reflect.apply(l.callback, this, [event]);
            else if (typeof l.callback.handleEvent === 'function') l.callback.handleEvent(event);
          } catch (error) {
            queueMicrotask(() => { throw error; });
          }
          s.passive = false;
          if (s.stopNow) break;
        }
      } finally {
        s.dispatching = false;
        s.currentTarget = null;
        s.phase = 0;
        s.stop = false;
        s.stopNow = false;
      }
      return !event.defaultPrevented;
    }
  }
  Object.defineProperty(EventTarget.prototype, Symbol.toStringTag, { value: 'EventTarget', configurable: true });

  // --------------------------------------------------------------- Abort
  const CONSTRUCT = Symbol('plimsoll:construct');
  const signals = new WeakMap(); // signal -> { aborted, reason, onabort }
  class AbortSignal extends EventTarget {
    constructor(key) {
      if (key !== CONSTRUCT) throw new TypeError('Illegal constructor');
      super();
      signals.set(this, { aborted: false, reason: undefined, onabort: null, handler: false });
    }
    get aborted() { return signals.get(this).aborted; }
    get reason() { return signals.get(this).reason; }
    get onabort() { return signals.get(this).onabort; }
    set onabort(fn) {
      const s = signals.get(this);
      s.onabort = typeof fn === 'function' || (fn !== null && typeof fn === 'object') ? fn : null;
      // An event handler keeps the place of its first assignment.
      if (!s.handler) {
        s.handler = true;
        this.addEventListener('abort', (e) => { if (typeof s.onabort === 'function') s.onabort.call(this, e); });
      }
    }
    throwIfAborted() { const s = signals.get(this); if (s.aborted) throw s.reason; }
    static abort(reason) {
      const signal = new AbortSignal(CONSTRUCT);
      settle(signal, reason);
      return signal;
    }
    static timeout(ms) {
      const signal = new AbortSignal(CONSTRUCT);
      setTimeout(() => settle(signal, new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms).unref();
      return signal;
    }
    static any(list) {
      const signal = new AbortSignal(CONSTRUCT);
      const sources = [...list];
      for (const source of sources) {
        if (!(source instanceof AbortSignal)) throw invalidArg('signals[0]', 'an instance of AbortSignal', source);
        if (source.aborted) { settle(signal, source.reason); return signal; }
      }
      for (const source of sources) source.addEventListener('abort', () => settle(signal, source.reason), { once: true });
      return signal;
    }
  }
  Object.defineProperty(AbortSignal.prototype, Symbol.toStringTag, { value: 'AbortSignal', configurable: true });
  function settle(signal, reason) {
    const s = signals.get(signal);
    if (s.aborted) return;
    s.aborted = true;
    s.reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    signal.dispatchEvent(new Event('abort'));
  }
  class AbortController {
    #signal = new AbortSignal(CONSTRUCT);
    get signal() { return this.#signal; }
    abort(reason) { settle(this.#signal, reason); }
  }
  Object.defineProperty(AbortController.prototype, Symbol.toStringTag, { value: 'AbortController', configurable: true });

  shared.DOMException = DOMException;
  shared.invalidArg = invalidArg;
  for (const c of [DOMException, Event, CustomEvent, EventTarget, AbortSignal, AbortController]) defineGlobal(c.name, c, false);
})
