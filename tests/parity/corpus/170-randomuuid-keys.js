// Using crypto.randomUUID as record ids; output shows only shapes, counts and lookups
const store = new Map();
for (const name of ['alpha', 'beta', 'gamma']) store.set(crypto.randomUUID(), { name });
console.log(store.size, [...store.values()].map(v => v.name));
const [firstId] = store.keys();
console.log(store.get(firstId).name, firstId.split('-').map(p => p.length));
console.log(firstId[14], ['8', '9', 'a', 'b'].includes(firstId[19]));
const redacted = JSON.stringify([...store].map(([id, v]) => ({ id: id.replace(/[0-9a-f]/g, 'x'), ...v })));
console.log(redacted);
