// console.log of objects containing long multi-line strings and many short fields
const doc = {
  title: 'Release notes',
  body: 'Line one of the body.\nLine two of the body.\nLine three is a bit longer than the others.',
  tags: ['release', 'notes'],
};
console.log(doc);
console.log({ sql: 'SELECT *\n  FROM users\n WHERE id = $1' });
console.log({ a: 'x'.repeat(16), b: 'y'.repeat(16), c: 'z'.repeat(16), d: 'w'.repeat(16) });
console.log({ longKey_aaaaaaaaaaaaaaaaaaaa: 1, longKey_bbbbbbbbbbbbbbbbbbbb: 2, longKey_c: 3 });
