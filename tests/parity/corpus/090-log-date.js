// console.log of Date objects (fixed timestamps), invalid dates, dates nested in objects
const d = new Date(Date.UTC(2024, 4, 17, 9, 5, 3, 7));
console.log(d);
console.log([d, new Date(0)]);
console.log({ createdAt: d, updatedAt: new Date(1e12) });
console.log(new Date(NaN));
console.log([new Date('not a date')]);
console.log(new Map([['when', new Date(-86400000)]]));
console.log(new Date(Date.UTC(-50, 0, 1)), new Date(Date.UTC(12000, 0, 1)));
