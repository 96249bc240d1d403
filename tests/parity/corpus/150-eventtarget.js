// EventTarget: addEventListener, once, removeEventListener, dispatch order, handleEvent objects
const target = new EventTarget();
const log = [];
function a(e) { log.push(`a:${e.type}`); }
target.addEventListener('ping', a);
target.addEventListener('ping', a);
target.addEventListener('ping', (e) => log.push(`once:${e.type}`), { once: true });
target.addEventListener('ping', { handleEvent(e) { log.push(`obj:${e.type}`); } });
const r1 = target.dispatchEvent(new Event('ping'));
target.dispatchEvent(new Event('ping'));
target.removeEventListener('ping', a);
target.dispatchEvent(new Event('ping'));
target.dispatchEvent(new Event('other'));
console.log(log.join(' '));
console.log(r1);
class Emitter extends EventTarget { fire(x) { this.dispatchEvent(new CustomEvent('data', { detail: x })); } }
const em = new Emitter();
em.addEventListener('data', (e) => console.log('got', e.detail, e.target === em, e instanceof Event));
em.fire({ n: 1 });
