// Parsing data: URIs with URL + atob; decoding base64 and percent-encoded payloads
function parseDataUri(uri) {
  const url = new URL(uri);
  if (url.protocol !== 'data:') throw new TypeError('not a data URI');
  const comma = url.pathname.indexOf(',');
  const meta = url.pathname.slice(0, comma).split(';');
  const isB64 = meta.at(-1) === 'base64';
  const mime = meta[0] || 'text/plain';
  const raw = url.pathname.slice(comma + 1);
  const bytes = isB64 ? Uint8Array.from(atob(raw), c => c.charCodeAt(0)) : new TextEncoder().encode(decodeURIComponent(raw));
  return { mime, isB64, size: bytes.length, text: new TextDecoder().decode(bytes) };
}
console.log(parseDataUri('data:text/plain;base64,SGVsbG8sIFdvcmxkIQ=='));
console.log(parseDataUri('data:,Hello%2C%20World%21'));
console.log(parseDataUri('data:application/json;base64,' + btoa('{"ok":true}')));
try { parseDataUri('https://example.com/x'); } catch (e) { console.log(e.name, e.message); }
