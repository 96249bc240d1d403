// console.log of class instances: class name prefix, private fields hidden, accessors hidden
class Point { constructor(x, y) { this.x = x; this.y = y; } }
class Point3D extends Point { constructor(x, y, z) { super(x, y); this.z = z; } }
class Secretive { #hidden = 1; visible = 2; get computed() { return 3; } static s = 4; }
class Empty {}
console.log(new Point(1, 2));
console.log(new Point3D(1, 2, 3));
console.log(new Secretive());
console.log(new Empty());
console.log([new Point(0, 0), new Point(5, -5)]);
console.log({ origin: new Point(0, 0) });
console.log(Point, Point3D, Empty, class {});
const anon = new (class {})();
console.log(anon);
class WithToString { toString() { return 'custom toString'; } }
console.log(new WithToString(), `${new WithToString()}`);
