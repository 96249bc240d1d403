// findLast/findLastIndex, at(), flat/flatMap, includes with NaN, Array.from with map
const events = [
  { t: 1, type: 'login', user: 'a' }, { t: 2, type: 'click', user: 'b' },
  { t: 3, type: 'login', user: 'b' }, { t: 4, type: 'logout', user: 'a' }, { t: 5, type: 'click', user: 'a' },
];
console.log(events.findLast(e => e.type === 'login'));
console.log(events.findLastIndex(e => e.user === 'b'), events.findLastIndex(e => e.user === 'z'));
console.log(events.find(e => e.type === 'click').t, events.at(-2).type, events.at(99));
console.log([1, [2, [3, [4, [5]]]]].flat(), [1, [2, [3, [4]]]].flat(Infinity));
console.log(['a b', 'c'].flatMap(s => s.split(' ')));
console.log([NaN].includes(NaN), [NaN].indexOf(NaN), [-0].includes(0));
console.log(Array.from({ length: 5 }, (_, i) => i * i), Array.of(7, 8), Array(3).fill('z'));
console.log([1, 2, 3, 4, 5].copyWithin(0, 3), [...'abc'].entries().next().value, Object.keys([4, 5]));
