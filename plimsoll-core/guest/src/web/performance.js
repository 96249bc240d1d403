// User Timing on `performance` (mark, measure, the entry lists) and its
// timeOrigin and toJSON, as Node has them. The run's clock starts with the
// run: timeOrigin is the wall-clock time at which performance.now() was 0.
(function performanceTiming(natives, util, defineGlobal, shared) {
  'use strict';
  const { DOMException } = shared;
  const perf = globalThis.performance;
  const now = perf.now.bind(perf);
  const entries = [];
  const CONSTRUCT = Symbol('plimsoll:construct');
  class PerformanceEntry {
    #name; #type; #start; #duration; #detail;
    constructor(key, name, type, start, duration, detail) {
      if (key !== CONSTRUCT) throw new TypeError('Illegal constructor');
      this.#name = name; this.#type = type; this.#start = start; this.#duration = duration; this.#detail = detail;
    }
    get name() { return this.#name; }
    get entryType() { return this.#type; }
    get startTime() { return this.#start; }
    get duration() { return this.#duration; }
    get detail() { return this.#detail; }
    toJSON() { return { name: this.name, entryType: this.entryType, startTime: this.startTime, duration: this.duration, detail: this.detail }; }
  }
  class PerformanceMark extends PerformanceEntry {}
  class PerformanceMeasure extends PerformanceEntry {}
  const timeOf = (mark) => {
    if (mark === undefined) return undefined;
    if (typeof mark === 'number') return mark;
    for (let i = entries.length - 1; i >= 0; i--) if (entries[i].entryType === 'mark' && entries[i].name === mark) return entries[i].startTime;
    throw new DOMException('The "' + mark + '" performance mark has not been set', 'SyntaxError');
  };
  let origin;
  const methods = {
    mark(name, options) {
      const start = options && options.startTime !== undefined ? Number(options.startTime) : now();
      const e = new PerformanceMark(CONSTRUCT, String(name), 'mark', start, 0, options && options.detail !== undefined ? structuredClone(options.detail) : null);
      entries.push(e);
      return e;
    },
    measure(name, startOrOptions, endMark) {
      let start, end, detail = null;
      if (startOrOptions !== null && typeof startOrOptions === 'object') {
        start = timeOf(startOrOptions.start);
        end = timeOf(startOrOptions.end);
        if (startOrOptions.duration !== undefined) {
          if (start === undefined) start = end - startOrOptions.duration;
          else end = start + startOrOptions.duration;
        }
        if (startOrOptions.detail !== undefined) detail = structuredClone(startOrOptions.detail);
      } else {
        start = timeOf(startOrOptions);
        end = timeOf(endMark);
      }
      if (end === undefined) end = now();
      if (start === undefined) start = 0;
      const e = new PerformanceMeasure(CONSTRUCT, String(name), 'measure', start, end - start, detail);
      entries.push(e);
      return e;
    },
    getEntries() { return entries.slice(); },
    getEntriesByName(name, type) { return entries.filter((e) => e.name === name && (type === undefined || e.entryType === type)); },
    getEntriesByType(type) { return entries.filter((e) => e.entryType === type); },
    clearMarks(name) { clear('mark', name); },
    clearMeasures(name) { clear('measure', name); },
    toJSON() {
      return {
        nodeTiming: {}, timeOrigin: this.timeOrigin,
        eventLoopUtilization: { idle: 0, active: 0, utilization: 0 },
      };
    },
  };
  function clear(type, name) {
    for (let i = entries.length - 1; i >= 0; i--) {
      if (entries[i].entryType === type && (name === undefined || entries[i].name === name)) entries.splice(i, 1);
    }
  }
  // QuickJS-NG's own performance object has a fixed timeOrigin of the
  // snapshot's clock; it is replaced by one of Node's shape.
  class Performance extends EventTarget {
    constructor(key) { if (key !== CONSTRUCT) throw new TypeError('Illegal constructor'); super(); }
    now() { return now(); }
    // Read on first use: the snapshot was taken before any run's clock began.
    get timeOrigin() { return origin ??= Date.now() - now(); }
  }
  for (const [k, fn] of Object.entries(methods)) Object.defineProperty(Performance.prototype, k, { value: fn, writable: true, configurable: true });
  Object.defineProperty(Performance.prototype, Symbol.toStringTag, { value: 'Performance', configurable: true });
  defineGlobal('performance', new Performance(CONSTRUCT), true);
  for (const c of [Performance, PerformanceEntry, PerformanceMark, PerformanceMeasure]) defineGlobal(c.name, c, false);
})
