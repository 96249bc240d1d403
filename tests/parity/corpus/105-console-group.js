// console.group / groupEnd indentation, nested groups, and groupCollapsed
console.log('top level');
console.group('Group A');
console.log('inside A');
console.group('Nested B');
console.log('inside B');
console.log({ multi: 'line', object: { with: 'nesting', and: ['an', 'array', 'that', 'is', 'long enough to wrap maybe'] } });
console.groupEnd();
console.log('back in A');
console.error('error inside A is indented too');
console.groupEnd();
console.groupCollapsed('Collapsed C');
console.log('inside C');
console.groupEnd();
console.group();
console.log('group with no label');
console.groupEnd();
console.groupEnd();
console.log('top again');
