// console.log of arrays with extra named properties (like regex match results)
const m = 'key=value'.match(/(?<k>\w+)=(?<v>\w+)/);
console.log(m);
const g = 'a1b2'.match(/\d/g);
console.log(g);
const execd = /(\d+)-(\d+)/.exec('range 10-20 end');
console.log(execd);
console.log([...'x1y2'.matchAll(/\d/g)]);
const arr = [1, 2];
arr.meta = { source: 'db' };
console.log(arr);
