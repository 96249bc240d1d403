// URL parsing: components, default ports, relative resolution, invalid input
const u = new URL('https://user:pa%20ss@sub.example.com:8443/a/b/../c/./d.html?x=1&y=two#frag');
for (const k of ['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash', 'origin']) {
  console.log(k.padEnd(9), u[k]);
}
console.log(new URL('http://example.com:80/').port === '', new URL('HTTP://EXAMPLE.com/%7Efoo').href);
console.log(new URL('../up?q', 'https://h.test/one/two/three').href);
console.log(new URL('//other.test/p', 'https://h.test/x').href);
try { new URL('not a url'); } catch (e) { console.log(e.name, e.code); }
console.log(URL.canParse('https://ok.test'), URL.canParse('nope'), URL.canParse('/rel', 'https://b.test'));
console.log(new URL('https://münchen.de/ä').href);
console.log(JSON.stringify({ link: new URL('https://j.test/a') }), String(new URL('file:///tmp/x y')));
