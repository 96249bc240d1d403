// console.log line-breaking: when objects exceed ~72 chars they wrap one property per line
console.log({ a: 1, b: 2, c: 3 });
console.log({ firstName: 'Alexander', lastName: 'Hamilton', occupation: 'Treasury' });
console.log({ firstName: 'Alexander', lastName: 'Hamilton', occupation: 'Treasury Secretary', born: 1755 });
console.log({ description: 'A'.repeat(90) });
console.log(['short', 'a fairly long string that pushes the line over the width limit', 'end']);
console.log({ nested: { deeper: { key: 'value', other: 'another value here', third: 'x'.repeat(30) } } });
console.log({ list: [1, 2, 3], obj: { a: 1 }, str: 'text', num: 12345, bool: false, nil: null });
