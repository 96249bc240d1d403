// console.log of empty containers and degenerate values
console.log({}, [], new Map(), new Set(), '', new Uint8Array(0));
console.log([{}], [[]], { a: {} }, { a: [] }, [[], [[]]]);
console.log(Object.create(null), new (class X {})(), new Array(0));
console.log([''], ['', ''], { '': '' });
console.log(Object.assign(Object.create({ inherited: 1 }), {}));
