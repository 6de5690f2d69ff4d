/**
 * Seconds from `npm start` to the first 200 from /v1/people with the printed demo key.
 * Run it on a fresh clone (or after `rm -rf .data`) for the cold figure; a second run shows the warm one.
 *
 *   npx tsx bench/startup.ts
 */
import { spawn } from "node:child_process";

const started = performance.now();
const stack = spawn("npm", ["start"], { stdio: ["ignore", "pipe", "inherit"], detached: true });
let out = "";
const token = await new Promise<string>((resolve, reject) => {
  stack.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
    const m = /Demo key:\s+(\S+)/.exec(out);
    if (m) resolve(m[1]!);
  });
  stack.once("exit", () => reject(new Error("npm start exited early")));
});
const printed = performance.now();
let status = 0;
while (status !== 200) {
  const res = await fetch("http://127.0.0.1:8787/v1/people?profnet_id=1001", { headers: { authorization: `Bearer ${token}` } });
  status = res.status;
  await res.arrayBuffer();
}
const firstOk = performance.now();
console.log(`demo key printed after ${((printed - started) / 1000).toFixed(2)} s; first 200 after ${((firstOk - started) / 1000).toFixed(2)} s`);
process.kill(-stack.pid!, "SIGTERM");
await new Promise((r) => stack.once("exit", r));
