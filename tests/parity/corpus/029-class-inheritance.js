// Class inheritance: super calls, method overriding, instanceof, new.target
class Shape {
  constructor(name) { this.name = name; if (new.target === Shape) console.log('plain Shape'); }
  area() { return 0; }
  describe() { return `${this.name} with area ${this.area().toFixed(2)}`; }
  toString() { return `[Shape ${this.name}]`; }
}
class Circle extends Shape {
  constructor(r) { super('circle'); this.r = r; }
  area() { return Math.PI * this.r ** 2; }
}
class Square extends Shape {
  constructor(s) { super('square'); this.s = s; }
  area() { return this.s ** 2; }
  describe() { return super.describe() + ' (square!)'; }
}
const shapes = [new Circle(1), new Square(3), new Shape('blob')];
for (const s of shapes) console.log(s.describe());
console.log(`${shapes[0]}`, String(shapes[1]));
console.log(shapes[0] instanceof Shape, shapes[0] instanceof Square, Object.getPrototypeOf(Square) === Shape);
console.log(shapes.map(s => s.constructor.name));
class MyArr extends Array { sum() { return this.reduce((a, b) => a + b, 0); } }
const ma = MyArr.from([1, 2, 3]);
console.log(ma.sum(), ma.map(x => x * 2).sum(), ma.length, Array.isArray(ma));
