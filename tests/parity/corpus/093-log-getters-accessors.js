// console.log shows accessor properties as [Getter], [Setter], [Getter/Setter]
const obj = {
  plain: 1,
  get onlyGet() { return 'g'; },
  set onlySet(v) {},
  get both() { return 'b'; },
  set both(v) {},
};
console.log(obj);
console.log(obj.onlyGet, obj.both, obj.onlySet);
const withDefined = Object.defineProperty({}, 'lazy', { get() { return 42; }, enumerable: true });
console.log(withDefined, withDefined.lazy);
const hidden = Object.defineProperty({ shown: true }, 'hidden', { value: 'x', enumerable: false });
console.log(hidden);
