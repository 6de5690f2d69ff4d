/**
 * The Worker as `wrangler dev` serves it (workerd), for the benches that measure it on loopback against a libSQL URL:
 * no probe, no inspector, no watching, on an ephemeral port.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { root } from "./child.ts";

// Loaded by Node itself rather than through tsx: wrangler is one 15 MB bundle.
const { unstable_startWorker } = createRequire(import.meta.url)("wrangler") as typeof import("wrangler");

export async function startDevWorker(databaseUrl: string, databaseAuthToken: string): Promise<{ base: string; dispose: () => Promise<void> }> {
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
  process.env.WRANGLER_SEND_METRICS = "false";
  const plain = (value: string) => ({ type: "plain_text" as const, value });
  const worker = await unstable_startWorker({
    config: join(root, "wrangler.toml"),
    bindings: { DATABASE_URL: plain(databaseUrl), DATABASE_AUTH_TOKEN: plain(databaseAuthToken), PROBE_URL: plain("") },
    dev: { server: { hostname: "127.0.0.1", port: 0 }, inspector: false, watch: false, logLevel: "warn" },
  });
  await worker.ready;
  return { base: (await worker.url).href.replace(/\/$/, ""), dispose: () => worker.dispose() };
}
