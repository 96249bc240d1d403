// URLSearchParams: parse query strings, get/getAll/has, iteration and encoding
const p = new URLSearchParams('?q=hello+world&lang=en&tag=js&tag=node&empty=&enc=%E2%9C%93&plus=a%2Bb');
console.log(p.get('q'), p.get('missing'), p.getAll('tag'), p.has('empty'), JSON.stringify(p.get('empty')));
console.log(p.get('enc'), p.get('plus'), p.size);
for (const [k, v] of p) console.log(`${k}=${v}`);
console.log(p.toString());
const fromObj = new URLSearchParams({ name: 'Zoë Ölund', sym: '&=?#', space: 'a b' });
console.log(fromObj.toString());
const fromPairs = new URLSearchParams([['a', '1'], ['a', '2'], ['b', '3']]);
fromPairs.delete('a', '1');
console.log(fromPairs.toString(), fromPairs.has('a', '2'));
console.log(Object.fromEntries(new URLSearchParams('x=1&y=2&x=3')));
