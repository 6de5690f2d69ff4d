/**
 * An SMTP server for benchmarks that answers every command after a fixed delay, as a server one
 * round trip away would: `node --import tsx bench/smtp-latency-server.ts --port P --delay-ms 20`.
 * It listens on 0.0.0.0, so it answers on every 127.x.y.z address: the probe sees thousands of
 * distinct destination IPs (and applies its per-destination limit to each) with one process here.
 *
 * Behaviour by recipient: local part "nobody" -> 550 5.1.1; domains starting with "catchall" accept
 * any address; anything else: the first RCPT of a transaction 250, later ones 550 5.1.1 (so the
 * random catch-all address is rejected). `--no-pipelining` hides PIPELINING. Prints "listening".
 */
import net from "node:net";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "2525" },
    "delay-ms": { type: "string", default: "20" },
    "no-pipelining": { type: "boolean", default: false },
  },
});
const delayMs = Number(values["delay-ms"]);
const capabilities = ["bench.test", ...(values["no-pipelining"] ? [] : ["PIPELINING"]), "8BITMIME", "SMTPUTF8"];
const ehloReply = capabilities.map((c, i) => `250${i === capabilities.length - 1 ? " " : "-"}${c}\r\n`).join("");

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  socket.on("error", () => {});
  let buffered = "";
  let rcptInTransaction = 0;
  // Replies go out in command order, each `delayMs` after its command arrived: a chain, because
  // independent timers can fire out of order when the clock ticks between scheduling two of them.
  let chain = Promise.resolve();
  const reply = (text: string, then?: () => void) => {
    const due = Date.now() + delayMs;
    chain = chain
      .then(() => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, due - Date.now()))))
      .then(() => {
        if (!socket.destroyed) socket.write(text);
        then?.();
      });
  };
  reply("220 bench.test ESMTP latency fixture\r\n");
  socket.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("latin1");
    if (buffered.length > 64 * 1024) return socket.destroy();
    let nl: number;
    while ((nl = buffered.indexOf("\n")) !== -1) {
      const line = buffered.slice(0, nl).replace(/\r$/, "");
      buffered = buffered.slice(nl + 1);
      const verb = line.slice(0, 4).toUpperCase();
      if (verb === "EHLO") reply(ehloReply);
      else if (verb === "HELO") reply("250 bench.test\r\n");
      else if (verb === "MAIL") {
        rcptInTransaction = 0;
        reply("250 2.1.0 Ok\r\n");
      } else if (verb === "RCPT") {
        rcptInTransaction++;
        const address = /<([^>]*)>/.exec(line)?.[1] ?? "";
        const [local, domain = ""] = address.split("@");
        const accept = local !== "nobody" && (domain.startsWith("catchall") || rcptInTransaction === 1);
        reply(accept ? "250 2.1.5 Ok\r\n" : `550 5.1.1 <${address}>: Recipient address rejected: User unknown\r\n`);
      } else if (verb === "QUIT") reply("221 2.0.0 Bye\r\n", () => socket.end());
      else reply("502 5.5.2 Error: command not recognized\r\n");
    }
  });
});
server.maxConnections = 20_000;
server.listen(Number(values.port), "0.0.0.0", () => process.stdout.write("listening\n"));
process.on("SIGTERM", () => process.exit(0));
