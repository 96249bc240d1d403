// btoa/atob base64 for ASCII strings, binary strings, and padding variants
console.log(btoa('hello'), btoa('hello!'), btoa('hello!!'), btoa(''));
console.log(atob('aGVsbG8='), atob('aGVsbG8'), atob(' aGVs bG8= '));
const binary = String.fromCharCode(0, 1, 254, 255);
console.log(btoa(binary), [...atob(btoa(binary))].map(c => c.charCodeAt(0)));
try { btoa('✓'); } catch (e) { console.log('btoa non-latin1:', e.name); }
try { atob('***'); } catch (e) { console.log('atob invalid:', e.name); }
const b64url = s => btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
console.log(b64url('subjects?_d>'), b64url(String.fromCharCode(251, 255)));
