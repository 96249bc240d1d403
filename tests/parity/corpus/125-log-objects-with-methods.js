// console.log of object literals that mix data with methods and arrow functions
const api = {
  baseUrl: 'https://api.example.com',
  retries: 3,
  get(path) { return this.baseUrl + path; },
  post: async function (path, body) { return [path, body]; },
  log: (...a) => a,
  nested: { helper() {}, value: 1 },
};
console.log(api);
console.log(api.get('/users'));
console.log(Object.keys(api).filter(k => typeof api[k] === 'function'));
