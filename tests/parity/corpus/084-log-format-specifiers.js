// console.log printf-style format specifiers: %s %d %i %f %j %o %O %c %%
console.log('%s is %d years and %f meters', 'Bob', 42, 1.85);
console.log('int: %i, from float: %i, from string: %d', 42.9, -3.7, '17');
console.log('json: %j', { a: [1, 2], b: 'x' });
console.log('obj: %O', { a: { b: { c: { d: 1 } } } });
console.log('percent: 100%% done, lone % sign');
console.log('%c styled text (css ignored)', 'color: red; font-weight: bold');
console.log('%s', 'only one', 'extra', 'args', 3);
console.log('missing: %s %s', 'one');
console.log('%d and %i with bigint', 10n, 20n);
console.log('%s with symbol and object', Symbol('sym'), { k: 'v' });
console.log('%s', null, '%s', undefined);
console.log('%d %d %d', 'abc', {}, []);
console.log('no specifiers', '%s');
console.log(5, '%s', 'first arg not a string');
