// Custom Error subclasses with extra fields, name override, instanceof checks
class AppError extends Error {
  constructor(message, options) { super(message, options); this.name = this.constructor.name; }
}
class NotFoundError extends AppError {
  constructor(resource, id) { super(`${resource} ${id} not found`); this.resource = resource; this.id = id; this.status = 404; }
}
class ValidationError extends AppError {
  constructor(fields) { super(`invalid fields: ${fields.join(', ')}`); this.fields = fields; this.status = 422; }
}
function handle(fn) {
  try { fn(); } catch (e) {
    if (e instanceof NotFoundError) console.log(e.status, e.name, e.message, e.resource, e.id);
    else if (e instanceof ValidationError) console.log(e.status, e.name, e.message, e.fields.length);
    else if (e instanceof AppError) console.log(500, e.name, e.message);
    else console.log('unknown', String(e));
  }
}
handle(() => { throw new NotFoundError('user', 17); });
handle(() => { throw new ValidationError(['email', 'age']); });
handle(() => { throw new AppError('generic'); });
handle(() => { throw 7; });
const e = new NotFoundError('post', 'abc');
console.log(e instanceof Error, e instanceof AppError, Object.prototype.toString.call(e), String(e));
console.log(Object.keys(e), typeof e.stack);
