// Deliberate uncaught exception: stdout before it is kept, exit code 1, stderr has a stack trace
console.log('step 1: loading');
const config = { retries: 2 };
console.log('step 2: retries =', config.retries);
function validate(c) {
  if (c.retries < 3) throw new RangeError(`retries must be >= 3, got ${c.retries}`);
}
validate(config);
console.log('never printed');
