// setInterval ticking a few times then clearInterval, with a final summary
let ticks = 0;
const values = [];
const id = setInterval(() => {
  ticks++;
  values.push(ticks * ticks);
  console.log('tick', ticks);
  if (ticks === 4) {
    clearInterval(id);
    console.log('cleared after', ticks, 'ticks');
    setTimeout(() => console.log('final values', values, 'ticks still', ticks), 30);
  }
}, 10);
console.log('interval started');
