// Deliberate syntax error: nothing runs, exit code 1, stderr shows the parser error
console.log('this line never runs because the whole script fails to parse');
const values = [1, 2, 3];
const total = values.reduce((a, b) => a + b, );
function broken( {
  return total;
}
