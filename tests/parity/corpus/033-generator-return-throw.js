// Generator two-way communication: next(value), return(), throw(), finally blocks
function* dialog() {
  try {
    const name = yield 'What is your name?';
    const age = yield `Hello ${name}, how old are you?`;
    yield `${name} is ${age}`;
    return 'done';
  } catch (e) {
    yield `caught: ${e.message}`;
  } finally {
    console.log('  (cleanup)');
  }
}
let g = dialog();
console.log(g.next().value);
console.log(g.next('Sam').value);
console.log(g.next(41).value);
console.log(g.next());
console.log(g.next());
g = dialog(); g.next();
console.log(g.throw(new Error('boom')));
console.log(g.next());
g = dialog(); g.next();
console.log(g.return('early'));
console.log(g.next());
const fresh = dialog();
try { fresh.throw(new Error('before start')); } catch (e) { console.log('outside:', e.message); }
