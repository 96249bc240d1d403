// JSON.stringify with an array replacer (allow-list) and numeric/string indent
const record = { id: 7, name: 'widget', secret: 'hunter2', meta: { id: 1, owner: 'x', secret: 'y' } };
console.log(JSON.stringify(record, ['id', 'name', 'meta']));
console.log(JSON.stringify(record, ['id', 'meta', 'owner'], 2));
console.log(JSON.stringify([1, [2, [3]]], null, 4));
console.log(JSON.stringify({ a: 1, b: [1, 2] }, null, '--'));
console.log(JSON.stringify({ a: 1 }, null, 20));
console.log(JSON.stringify({}, null, 2), JSON.stringify([], null, 2));
