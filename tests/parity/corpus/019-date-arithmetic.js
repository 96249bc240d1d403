// Date arithmetic in UTC: add days/months, day-of-year, ISO week, days between
const DAY = 86400000;
const start = Date.UTC(2024, 0, 31);
const addDays = (t, n) => new Date(t + n * DAY);
console.log(addDays(start, 29).toISOString().slice(0, 10));
const d = new Date(start);
d.setUTCMonth(d.getUTCMonth() + 1);
console.log('Jan 31 + 1 month =', d.toISOString().slice(0, 10));
function dayOfYear(dt) { return Math.floor((dt - Date.UTC(dt.getUTCFullYear(), 0, 1)) / DAY) + 1; }
function isoWeek(dt) {
  const t = new Date(Date.UTC(dt.getUTCFullYear(), dt.getUTCMonth(), dt.getUTCDate()));
  const day = t.getUTCDay() || 7;
  t.setUTCDate(t.getUTCDate() + 4 - day);
  return Math.ceil(((t - Date.UTC(t.getUTCFullYear(), 0, 1)) / DAY + 1) / 7);
}
for (const [y, m, dd] of [[2024, 11, 31], [2021, 0, 3], [2020, 11, 31], [2023, 5, 15]]) {
  const dt = new Date(Date.UTC(y, m, dd));
  console.log(dt.toISOString().slice(0, 10), 'doy', dayOfYear(dt), 'week', isoWeek(dt));
}
console.log('days 2000→2024:', (Date.UTC(2024, 0, 1) - Date.UTC(2000, 0, 1)) / DAY);
const leap = y => new Date(Date.UTC(y, 1, 29)).getUTCMonth() === 1;
console.log([1900, 2000, 2023, 2024].map(leap));
