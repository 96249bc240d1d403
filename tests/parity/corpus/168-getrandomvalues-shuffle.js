// Fisher-Yates shuffle with crypto.getRandomValues; print only order-independent facts
function shuffle(arr) {
  const a = [...arr];
  const rnd = new Uint32Array(a.length);
  crypto.getRandomValues(rnd);
  for (let i = a.length - 1; i > 0; i--) {
    const j = rnd[i] % (i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}
const deck = Array.from({ length: 52 }, (_, i) => i);
const s = shuffle(deck);
console.log(s.length, new Set(s).size, s.toSorted((x, y) => x - y).every((v, i) => v === i));
const bytes = crypto.getRandomValues(new Uint8Array(256));
console.log(bytes.every(b => b >= 0 && b <= 255), bytes.length);
const hex = Array.from(crypto.getRandomValues(new Uint8Array(8)), b => b.toString(16).padStart(2, '0')).join('');
console.log(/^[0-9a-f]{16}$/.test(hex));
