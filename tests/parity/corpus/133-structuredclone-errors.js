// structuredClone throws DataCloneError for functions, symbols and WeakMaps
const cases = {
  function: { f() {} },
  symbol: Symbol('s'),
  weakmap: new WeakMap(),
  nestedFn: [1, () => 2],
};
for (const [label, value] of Object.entries(cases)) {
  try {
    structuredClone(value);
    console.log(label, 'cloned?!');
  } catch (e) {
    console.log(label.padEnd(9), e.name, e instanceof DOMException, e.code);
  }
}
try { structuredClone(); } catch (e) { console.log('no-arg', e.name); }
console.log(structuredClone(undefined));
