// console.log of primitives at top level vs inside arrays (strings get quotes when nested)
console.log('plain string', 42, 3.14, true, false, null, undefined);
console.log(['plain string', 42, 3.14, true, false, null, undefined]);
console.log({ s: 'str', n: 1, b: false, nil: null, u: undefined });
console.log('');
console.log();
console.log(' leading and trailing spaces ');
console.log([' padded ', '', 'tab\there', 'new\nline']);
console.log("it's", ["it's"], ['say "hi"'], ["both ' and \""], ['back`tick']);
console.log(typeof 1, typeof 'x', typeof null, typeof undefined, typeof {}, typeof [], typeof (() => 1));
