// Deliberate non-zero exit: validation fails, message to stderr, process.exitCode = 3
const input = [{ id: 1, email: 'a@x.io' }, { id: 2, email: 'not-an-email' }, { id: 3, email: '' }];
const invalid = input.filter(r => !/^[^@\s]+@[^@\s]+\.[a-z]+$/.test(r.email));
console.log(`checked ${input.length} records, ${invalid.length} invalid`);
for (const r of invalid) console.error(`invalid email for id=${r.id}: ${JSON.stringify(r.email)}`);
if (invalid.length) process.exitCode = 3;
setTimeout(() => console.log('pending timer still runs before exit'), 5);
