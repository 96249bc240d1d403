// Mutating URL components and searchParams; the href updates accordingly
const u = new URL('https://api.example.com/v1/items');
u.searchParams.set('page', '2');
u.searchParams.append('tag', 'a b');
u.searchParams.append('tag', 'c&d');
console.log(u.href);
u.pathname = '/v2/items list';
u.hash = 'top';
u.port = '8080';
console.log(u.href);
u.protocol = 'http';
u.hostname = 'localhost';
console.log(u.toString());
u.search = '';
console.log(u.href, u.searchParams.size);
u.port = '80';
console.log(u.host, u.href);
