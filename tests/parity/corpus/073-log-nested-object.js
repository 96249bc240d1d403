// console.log of a realistic nested API response object
const response = {
  status: 200,
  ok: true,
  headers: { 'content-type': 'application/json', 'x-request-id': 'abc-123' },
  data: {
    user: { id: 17, name: 'Grace Hopper', roles: ['admin', 'dev'], active: true },
    stats: { posts: 12, followers: 1024, ratio: 85.33 },
  },
  error: null,
};
console.log(response);
console.log(response.data);
console.log(response.headers, response.data.user.roles);
