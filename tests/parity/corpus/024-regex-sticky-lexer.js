// Sticky (y flag) regexes driving a tiny arithmetic tokenizer and evaluator
const rules = [['ws', /\s+/y], ['num', /\d+(?:\.\d+)?/y], ['op', /[-+*/()]/y], ['id', /[a-z]+/y]];
function tokenize(src) {
  const out = []; let pos = 0;
  outer: while (pos < src.length) {
    for (const [type, re] of rules) {
      re.lastIndex = pos;
      const m = re.exec(src);
      if (m) { if (type !== 'ws') out.push([type, m[0]]); pos = re.lastIndex; continue outer; }
    }
    throw new SyntaxError(`Unexpected '${src[pos]}' at ${pos}`);
  }
  return out;
}
const toks = tokenize('3 + 4.5 * (2 - x)');
console.log(toks.map(t => t.join(':')).join(' '));
try { tokenize('1 + $'); } catch (e) { console.log(e.name + ': ' + e.message); }
const y = /foo/y;
console.log(y.test('xfoo'), y.lastIndex, (y.lastIndex = 1, y.test('xfoo')), y.lastIndex, y.sticky, y.flags);
