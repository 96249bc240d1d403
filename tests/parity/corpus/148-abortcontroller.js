// AbortController: abort event, signal.aborted, default and custom reasons, throwIfAborted
const ac = new AbortController();
const { signal } = ac;
console.log(signal.aborted, signal.reason);
signal.addEventListener('abort', (ev) => console.log('abort event:', ev.type, signal.reason.name ?? signal.reason));
signal.onabort = () => console.log('onabort handler');
ac.abort();
ac.abort('second abort ignored');
console.log(signal.aborted, signal.reason instanceof DOMException, signal.reason.name, signal.reason.message);
try { signal.throwIfAborted(); } catch (e) { console.log('throwIfAborted:', e.name); }
const ac2 = new AbortController();
ac2.abort(new Error('custom reason'));
console.log(ac2.signal.reason.message);
const pre = AbortSignal.abort('why');
console.log(pre.aborted, pre.reason);
