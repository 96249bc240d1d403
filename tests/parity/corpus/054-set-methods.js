// ES2025 Set methods: union, intersection, difference, symmetricDifference, subset tests
const frontend = new Set(['js', 'css', 'html', 'ts']);
const backend = new Set(['ts', 'go', 'sql', 'js']);
const show = s => [...s].join(',');
console.log('union        ', show(frontend.union(backend)));
console.log('intersection ', show(frontend.intersection(backend)));
console.log('difference   ', show(frontend.difference(backend)));
console.log('symmetric    ', show(frontend.symmetricDifference(backend)));
console.log(new Set(['js']).isSubsetOf(frontend), frontend.isSupersetOf(new Set(['css', 'js'])), frontend.isDisjointFrom(new Set(['rust'])));
const mapLike = new Map([['js', 1], ['go', 2]]);
console.log(show(frontend.intersection(mapLike)));
console.log(frontend.size, backend.size);
