// Printing selected Error fields (never the stack): name, message, cause, custom props
const errors = [
  new Error('plain'),
  new TypeError('wrong type'),
  new RangeError('out of range'),
  new Error('with cause', { cause: new Error('root cause') }),
  Object.assign(new Error('with props'), { code: 'E_CODE', status: 503 }),
];
for (const e of errors) {
  console.log({ name: e.name, message: e.message, cause: e.cause?.message, code: e.code });
}
console.log(errors.map(e => `${e}`));
console.log(errors.map(e => e.toString()).join(' | '));
const custom = new Error('renamed');
custom.name = 'MyCustomError';
console.log(String(custom), custom.name, Object.prototype.toString.call(custom));
console.log(JSON.stringify(errors[4]), JSON.stringify({ message: errors[0].message }));
