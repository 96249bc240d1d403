// Unicode regexes: u and v flags, property escapes, astral characters
const s = 'Café ☕ naïve 日本語 😀👍 Ελληνικά';
console.log(s.match(/\p{L}+/gu));
console.log(s.match(/\p{Emoji_Presentation}/gu));
console.log(s.match(/\p{Script=Greek}+/u)[0], s.match(/\p{Script=Han}+/u)[0]);
console.log(/^.$/.test('😀'), /^.$/u.test('😀'));
console.log('😀'.match(/./gu).length, '😀'.match(/./g).length);
console.log(/[\p{L}--[a-z]]+/v.exec('abcDEFghi')[0]);
console.log(/\u{1F600}/u.test('😀'), /[\q{abc}x]/v.exec('zabc')[0]);
console.log('ÀÉÎõü'.normalize('NFD').replace(/\p{M}/gu, ''));
console.log(/\w/iu.flags, new RegExp('a.b', 'su').dotAll, /x/v.unicodeSets);
