/** Runs the probe's HTTP service on @hono/node-server; used by probe/main.ts, `npm start` and tests. */
import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import type { ProbeConfig } from "./config.ts";
import { createProbeApp, createProbeService, type ProbeService } from "./app.ts";

export type RunningProbe = { url: string; service: ProbeService; close(): Promise<void> };

export async function startProbeServer(config: ProbeConfig): Promise<RunningProbe> {
  const service = createProbeService(config);
  const app = createProbeApp(service);
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: config.port, hostname: config.listenHost }, () => resolve(s));
    s.once("error", reject);
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(":") ? `[${address}]` : address;
  return {
    url: `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`,
    service,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
