// structuredClone used for an undo/redo history of an editor state snapshot
const history = [];
let state = { title: 'Draft', blocks: [{ type: 'p', text: 'Hello' }], meta: { rev: 0, tags: new Set(['new']) } };
function commit(mutator) {
  history.push(structuredClone(state));
  mutator(state);
  state.meta.rev++;
}
commit(s => s.blocks.push({ type: 'h1', text: 'Heading' }));
commit(s => { s.title = 'Final'; s.meta.tags.add('edited'); });
commit(s => { s.blocks[0].text = 'Hello, world'; });
console.log(state.title, state.meta.rev, state.blocks.map(b => b.text), [...state.meta.tags]);
while (history.length) {
  state = history.pop();
  console.log('undo ->', state.title, state.meta.rev, state.blocks.length, state.blocks[0].text, state.meta.tags.size);
}
console.log(state);
