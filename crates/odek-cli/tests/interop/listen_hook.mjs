// Loaded with `node --import` ahead of a third-party server that listens on `PORT` (0: the
// kernel picks one) and never says which: binds it to 127.0.0.1, prints the one line
// `listening http://127.0.0.1:<port><LISTEN_PATH>` (default `/mcp`) once its socket listens,
// and exits when stdin closes,
// so a test learns the URL without a guess and leaves no server behind.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if ((typeof args[0] === "number" || typeof args[0] === "string") && typeof args[1] === "function") {
    args.splice(1, 0, "127.0.0.1");
  }
  this.once("listening", () => {
    const { port } = this.address();
    process.stdout.write(`listening http://127.0.0.1:${port}${process.env.LISTEN_PATH ?? "/mcp"}\n`);
  });
  return listen.apply(this, args);
};
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
