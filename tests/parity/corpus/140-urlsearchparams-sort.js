// URLSearchParams sort, set replacing duplicates, and building a canonical query string
const params = new URLSearchParams();
for (const [k, v] of [['z', '26'], ['a', '1'], ['m', '13'], ['a', '0'], ['b', '2']]) params.append(k, v);
console.log(params.toString());
params.sort();
console.log(params.toString());
params.set('a', 'only');
console.log(params.toString(), [...params.keys()].join(','));
const canonical = obj => new URLSearchParams(Object.entries(obj).sort(([a], [b]) => (a < b ? -1 : 1))).toString();
console.log(canonical({ limit: 10, offset: 20, filter: 'status:open', sort: '-created' }));
console.log(`${new URLSearchParams({ spaces: 'x y z', star: '*', tilde: '~', slash: '/' })}`);
