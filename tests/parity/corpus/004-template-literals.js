// Template literals: interpolation, multiline, nesting, expressions
const user = { name: 'Dana', items: 3, price: 4.5 };
console.log(`Hi ${user.name}, you have ${user.items} item${user.items === 1 ? '' : 's'}.`);
console.log(`Total: $${(user.items * user.price).toFixed(2)}`);
const rows = [['a', 1], ['b', 22], ['c', 333]];
const report = `Report:
${rows.map(([k, v]) => `  ${k} => ${String(v).padStart(4, '.')}`).join('\n')}
end`;
console.log(report);
console.log(`${[1, 2, 3]} | ${{}} | ${null} | ${undefined} | ${1n} | ${-0}`);
console.log(`backtick: \` dollar: \${x} newline-escape: \\n`);
console.log(String.raw`C:\temp\new\file ${1 + 1}`);
