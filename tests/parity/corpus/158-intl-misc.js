// Intl.PluralRules, RelativeTimeFormat, ListFormat with en-US (deterministic strings)
const pr = new Intl.PluralRules('en-US');
console.log([0, 1, 2, 5].map(n => `${n}:${pr.select(n)}`).join(' '));
const ord = new Intl.PluralRules('en-US', { type: 'ordinal' });
const suffix = { one: 'st', two: 'nd', few: 'rd', other: 'th' };
console.log([1, 2, 3, 4, 11, 12, 13, 21, 22, 101].map(n => n + suffix[ord.select(n)]).join(' '));
const rtf = new Intl.RelativeTimeFormat('en-US', { numeric: 'auto' });
console.log(rtf.format(-1, 'day'), '|', rtf.format(2, 'week'), '|', rtf.format(0, 'year'), '|', rtf.format(-3, 'hour'));
const lf = new Intl.ListFormat('en-US', { style: 'long', type: 'conjunction' });
console.log(lf.format(['red', 'green', 'blue']), '|', new Intl.ListFormat('en-US', { type: 'disjunction' }).format(['a', 'b']));
console.log(Intl.getCanonicalLocales(['EN-us', 'de-de']), typeof Intl.Segmenter);
const seg = new Intl.Segmenter('en-US', { granularity: 'word' });
console.log([...seg.segment('Hello, world! 42')].filter(s => s.isWordLike).map(s => s.segment));
