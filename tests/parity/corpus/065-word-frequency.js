// Word-frequency analysis of a paragraph: normalize, count, sort, top-N
const text = `It was the best of times, it was the worst of times, it was the age of wisdom,
it was the age of foolishness, it was the epoch of belief, it was the epoch of incredulity,
it was the season of Light, it was the season of Darkness, it was the spring of hope,
it was the winter of despair.`;
const words = text.toLowerCase().match(/[a-z']+/g);
const freq = {};
for (const w of words) freq[w] = (freq[w] || 0) + 1;
const top = Object.entries(freq).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 8);
console.log('total words:', words.length, 'unique:', Object.keys(freq).length);
for (const [w, n] of top) console.log(w.padEnd(8), '#'.repeat(n), n);
const longest = words.reduce((a, b) => (b.length > a.length ? b : a));
console.log('longest:', longest, 'avg length:', (words.join('').length / words.length).toFixed(3));
