// queueMicrotask batching: coalesce many updates into one flush
const pending = [];
let scheduled = false;
function enqueue(item) {
  pending.push(item);
  if (!scheduled) {
    scheduled = true;
    queueMicrotask(() => {
      console.log('flush', pending.length, 'items:', pending.join(','));
      pending.length = 0;
      scheduled = false;
    });
  }
}
enqueue('a'); enqueue('b'); enqueue('c');
console.log('after sync enqueues, pending =', pending.length);
setTimeout(() => { enqueue('d'); enqueue('e'); console.log('timer enqueued'); }, 5);
try { queueMicrotask('not a function'); } catch (e) { console.log(e.name); }
let depth = 0;
function chain() { if (++depth < 5) queueMicrotask(chain); else console.log('microtask chain depth', depth); }
queueMicrotask(chain);
