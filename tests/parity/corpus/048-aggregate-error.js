// AggregateError constructed directly: errors array, message, name
const errs = [new Error('disk full'), new TypeError('bad arg'), 'string reason'];
const agg = new AggregateError(errs, 'Multiple failures');
console.log(agg.name, '|', agg.message, '|', agg.errors.length);
for (const [i, e] of agg.errors.entries()) console.log(i, e instanceof Error ? `${e.name}: ${e.message}` : e);
console.log(agg instanceof Error, agg.errors !== errs, Array.isArray(agg.errors));
const empty = new AggregateError([]);
console.log(JSON.stringify(empty.message), empty.errors);
const withCause = new AggregateError([1, 2], 'with cause', { cause: 'root' });
console.log(withCause.cause, withCause.errors);
console.log(String(agg), Object.prototype.toString.call(agg));
