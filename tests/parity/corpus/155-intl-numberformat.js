// Intl.NumberFormat with en-US: currency, percent, units, compact, signDisplay, formatToParts
const fmt = (opts, v) => new Intl.NumberFormat('en-US', opts).format(v);
console.log(fmt({}, 1234567.891), fmt({ maximumSignificantDigits: 3 }, 1234567.891));
console.log(fmt({ style: 'currency', currency: 'USD' }, -42.5), fmt({ style: 'currency', currency: 'JPY' }, 5000));
console.log(fmt({ style: 'currency', currency: 'EUR', currencyDisplay: 'name' }, 2));
console.log(fmt({ style: 'percent', maximumFractionDigits: 2 }, 0.12345));
console.log(fmt({ style: 'unit', unit: 'kilometer-per-hour' }, 88), fmt({ style: 'unit', unit: 'megabyte', unitDisplay: 'long' }, 1.5));
console.log(fmt({ notation: 'compact' }, 1500), fmt({ notation: 'compact' }, 2.5e9), fmt({ notation: 'scientific' }, 123456));
console.log(fmt({ signDisplay: 'always' }, 5), fmt({ signDisplay: 'exceptZero' }, 0), fmt({ minimumFractionDigits: 2 }, 3));
console.log(new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).formatToParts(1234.5).map(p => `${p.type}:${p.value}`).join(' '));
console.log(new Intl.NumberFormat('en-US').resolvedOptions().locale);
