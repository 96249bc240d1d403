// toLocaleString with explicit en-US locale for numbers, currency and percentages
const n = 1234567.891;
console.log(n.toLocaleString('en-US'));
console.log(n.toLocaleString('en-US', { maximumFractionDigits: 0 }));
console.log(n.toLocaleString('en-US', { style: 'currency', currency: 'USD' }));
console.log((0.4567).toLocaleString('en-US', { style: 'percent', minimumFractionDigits: 1 }));
console.log((42).toLocaleString('en-US', { minimumIntegerDigits: 5, useGrouping: false }));
console.log((-9876.5).toLocaleString('en-US', { style: 'currency', currency: 'EUR' }));
console.log((1e9).toLocaleString('en-US', { notation: 'compact' }), (1234).toLocaleString('en-US', { notation: 'compact', compactDisplay: 'long' }));
console.log(12345678901234567890n.toLocaleString('en-US'));
console.log([1000, 2000.5].toLocaleString('en-US'));
