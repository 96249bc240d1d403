// Optional chaining (?.), nullish coalescing (??), and how they differ from ||
const resp = { data: { user: { name: 'Ola', tags: [], settings: null, count: 0 } }, fn: null };
console.log(resp.data?.user?.name, resp.missing?.deep.chain, resp.data.user.settings?.theme);
console.log(resp.data.user.tags?.[0], resp.data.user.tags?.length, resp.fn?.(), resp.data.user.toUpperCase?.());
console.log(resp.data.user.count || 10, resp.data.user.count ?? 10, '' || 'empty', '' ?? 'empty');
console.log(null ?? undefined ?? false ?? 'x', undefined?.x ?? 'fallback');
const get = (obj, path) => path.split('.').reduce((o, k) => o?.[k], obj);
console.log(get(resp, 'data.user.name'), get(resp, 'data.nope.name'), get(resp, 'data.user.tags.length'));
const arr = null;
console.log(arr?.[0], arr?.map(x => x), typeof arr?.length);
delete resp?.data?.user?.name;
console.log(Object.keys(resp.data.user));
