// Tagged template literals: raw strings, HTML escaping tag, dedent helper
function html(strings, ...values) {
  const esc = v => String(v).replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  return strings.reduce((out, s, i) => out + s + (i < values.length ? esc(values[i]) : ''), '');
}
const user = '<script>alert("x")</script>';
console.log(html`<p title="${"it's"}">${user} & friends</p>`);
function inspectTag(strings, ...vals) { return JSON.stringify({ strings, raw: strings.raw, vals }); }
console.log(inspectTag`a${1}b\n${2}c`);
function dedent(strings, ...vals) {
  const full = strings.raw.reduce((acc, s, i) => acc + s + (vals[i] ?? ''), '');
  const lines = full.replace(/^\n/, '').split('\n');
  const ind = Math.min(...lines.filter(l => l.trim()).map(l => l.match(/^ */)[0].length));
  return lines.map(l => l.slice(ind)).join('\n').trimEnd();
}
console.log(dedent`
    line one
      indented ${'value'}
    line three
`);
const same = s => s;
console.log(same`x` === same`x`, (() => { const t = s => s; const f = () => t`y`; return f() === f(); })());
