// Classic algorithms: binary search, quicksort, dedupe, two-sum, run-length encoding
function bsearch(arr, x) { let lo = 0, hi = arr.length - 1; while (lo <= hi) { const mid = (lo + hi) >> 1; if (arr[mid] === x) return mid; arr[mid] < x ? (lo = mid + 1) : (hi = mid - 1); } return -(lo + 1); }
const data = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29];
console.log([7, 2, 29, 4, 30, 1].map(x => bsearch(data, x)));
const qs = a => (a.length < 2 ? a : [...qs(a.slice(1).filter(x => x < a[0])), a[0], ...qs(a.slice(1).filter(x => x >= a[0]))]);
console.log(qs([38, 27, 43, 3, 9, 82, 10, 3]));
function twoSum(nums, target) { const seen = new Map(); for (const [i, n] of nums.entries()) { if (seen.has(target - n)) return [seen.get(target - n), i]; seen.set(n, i); } return null; }
console.log(twoSum([2, 7, 11, 15], 9), twoSum([3, 2, 4], 6), twoSum([1], 5));
const rle = s => s.replace(/(.)\1*/g, m => m.length + m[0]);
const unrle = s => s.replace(/(\d+)(.)/g, (_, n, c) => c.repeat(n));
console.log(rle('aaabccddddde'), unrle(rle('aaabccddddde')) === 'aaabccddddde');
const isPal = s => { const t = s.toLowerCase().replace(/[^a-z0-9]/g, ''); return t === [...t].reverse().join(''); };
console.log(isPal('A man, a plan, a canal: Panama'), isPal('parity'));
