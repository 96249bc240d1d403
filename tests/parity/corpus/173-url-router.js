// Tiny router: match URL pathnames against patterns with :params, read query via URL
const routes = [
  ['GET', '/users/:id', 'showUser'],
  ['GET', '/users/:id/posts/:postId', 'showPost'],
  ['GET', '/search', 'search'],
];
function match(method, href) {
  const url = new URL(href, 'http://localhost');
  const parts = url.pathname.split('/').filter(Boolean);
  for (const [m, pattern, name] of routes) {
    const pp = pattern.split('/').filter(Boolean);
    if (m !== method || pp.length !== parts.length) continue;
    const params = {};
    if (pp.every((p, i) => (p.startsWith(':') ? ((params[p.slice(1)] = decodeURIComponent(parts[i])), true) : p === parts[i]))) {
      return { name, params, query: Object.fromEntries(url.searchParams) };
    }
  }
  return { name: 'notFound', path: url.pathname };
}
for (const href of ['/users/42', '/users/j%C3%B6rg/posts/7?draft=1', '/search?q=node+24&page=2', '/nope/x', 'https://other.host/users/9#top']) {
  console.log(href.padEnd(34), JSON.stringify(match('GET', href)));
}
