// Preloaded (`node --require ./loopback.cjs`) into a reference server the tests start: every
// server it listens with binds 127.0.0.1 only, whatever host it asks for, and the port it got
// is printed to stderr as `dsh-test-port=<port>` (PORT=0 lets the system choose a free one).
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const callback = typeof args[args.length - 1] === "function" ? args.pop() : undefined;
  const first = args[0];
  const port = typeof first === "object" && first !== null ? first.port : first;
  this.once("listening", () => {
    process.stderr.write(`dsh-test-port=${this.address().port}\n`);
  });
  return listen.call(this, { port: Number(port) || 0, host: "127.0.0.1" }, callback);
};
