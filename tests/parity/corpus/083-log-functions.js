// console.log of functions: named, anonymous, arrow, async, generator, bound, class, builtins
function named() {}
const arrow = () => {};
const anonymousFn = function () {};
async function asyncFn() {}
function* genFn() {}
async function* asyncGen() {}
console.log(named, arrow, anonymousFn);
console.log(asyncFn, genFn, asyncGen);
console.log(named.bind(null), Math.max, Array.prototype.push, parseInt);
console.log([named, arrow, (x) => x]);
console.log({ method() {}, arrowProp: () => {}, nested: { fn: function inner() {} } });
const withProps = function tagged() {};
withProps.version = '1.0';
withProps.flag = true;
console.log(withProps);
console.log(named.name, arrow.name, named.length, ((a, b, ...c) => 0).length);
console.log((function () {}).name === '', (() => {}).name);
