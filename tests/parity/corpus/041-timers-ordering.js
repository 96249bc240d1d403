// setTimeout ordering across different delays, equal delays, extra args, and clearTimeout
const log = [];
setTimeout(() => log.push('t10-a'), 10);
setTimeout(() => log.push('t0'), 0);
setTimeout(() => log.push('t10-b'), 10);
const cancelled = setTimeout(() => log.push('never'), 15);
clearTimeout(cancelled);
setTimeout((a, b) => log.push(`args:${a}+${b}`), 20, 'x', 'y');
setTimeout(() => {
  log.push('t20');
  setTimeout(() => {
    log.push('nested-0');
    console.log(log.join(' '));
  }, 0);
}, 20);
console.log('scheduled');
