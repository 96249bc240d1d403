// console.log of null-prototype objects: Object.create(null) and Object.groupBy results
const bare = Object.create(null);
bare.a = 1; bare.b = 'two';
console.log(bare);
console.log(Object.create(null));
const grouped = Object.groupBy([1, 2, 3, 4, 5, 6], n => (n % 2 ? 'odd' : 'even'));
console.log(grouped);
console.log({ nested: grouped });
const people = [{ name: 'ann', dept: 'eng' }, { name: 'bo', dept: 'ops' }, { name: 'cy', dept: 'eng' }];
console.log(Object.groupBy(people, p => p.dept));
class Foo {}
const weird = Object.create(Foo.prototype);
weird.k = 'v';
console.log(weird, Object.setPrototypeOf({ z: 1 }, null));
