// Date with a fixed timestamp: UTC getters, toISOString, toJSON, getTime
const d = new Date(1700000000000);
console.log(d.toISOString());
console.log(d.getTime(), d.valueOf() === +d);
console.log(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCDay(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
console.log(d.toJSON(), JSON.stringify({ d }));
console.log(new Date(0).toISOString(), new Date(-1).toISOString());
console.log(new Date(Date.UTC(2000, 0, 1)).toISOString(), Date.UTC(1970, 0, 2));
console.log(isNaN(new Date('garbage').getTime()), String(new Date(NaN)));
try { new Date(NaN).toISOString(); } catch (e) { console.log(e.name, e.message); }
console.log(new Date(8.64e15).toISOString(), new Date(8.64e15 + 1).getTime());
