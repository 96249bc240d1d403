// crypto.randomUUID: check format with a regex (v4), uniqueness, never print the value
const re = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ids = Array.from({ length: 50 }, () => crypto.randomUUID());
console.log(typeof ids[0], ids[0].length);
console.log('all match v4 format:', ids.every(id => re.test(id)));
console.log('all unique:', new Set(ids).size === ids.length);
console.log('lowercase:', ids.every(id => id === id.toLowerCase()));
