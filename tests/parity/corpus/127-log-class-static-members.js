// console.log of classes with static members, and of instances with prototype chains
class Config {
  static defaults = { retries: 3 };
  static version = '2.1.0';
  static create() { return new Config(); }
  constructor() { this.values = { ...Config.defaults }; }
}
console.log(Config);
console.log(Config.create());
class Child extends Config { static extra = true; }
console.log(Child, new Child());
console.log(Object.getOwnPropertyNames(Config).sort());
console.log(Config.prototype, Object.getPrototypeOf(new Child()) === Child.prototype);
