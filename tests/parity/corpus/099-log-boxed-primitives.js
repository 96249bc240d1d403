// console.log of boxed primitives: new String/Number/Boolean, Object(symbol)
console.log(new String('boxed'), new Number(42), new Boolean(false));
console.log([new String('in array'), new Number(-0), new Boolean(true)]);
const s = new String('ab');
s.extra = 'prop';
console.log(s);
console.log(typeof new Number(1), new Number(1) + 1, new Boolean(false) ? 'truthy' : 'falsy');
console.log(Object('str') instanceof String, Object(1).valueOf(), Object(1n));
