// console.error / console.warn go to stderr, console.log/info to stdout; interleaved
console.log('stdout line 1');
console.error('stderr line 1');
console.info('stdout via info');
console.warn('stderr via warn');
console.error('error with object:', { code: 500, retry: false });
console.error('%s failed after %d attempts', 'upload', 3);
console.log('stdout line 2');
console.error([1, 2, 3], new Map([['k', 'v']]));
console.debug('debug goes to stdout');
