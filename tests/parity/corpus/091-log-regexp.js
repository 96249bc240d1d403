// console.log of RegExp literals and constructed regexes with flags and escapes
console.log(/abc/);
console.log(/a+b*c?/gimsuy, /x/d, /[\p{L}]/v);
console.log(new RegExp('a/b'), new RegExp('\\d+', 'g'), new RegExp(''));
console.log([/one/, /two/g], { pattern: /^\s*$/ });
console.log(String(/x\/y/), /x/.source, /x/gi.flags);
const re = /tagged/;
re.extra = 1;
console.log(re);
