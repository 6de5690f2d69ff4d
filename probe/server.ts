/** Runs the probe's HTTP service on @hono/node-server; used by probe/main.ts, `npm start` and tests. */
import { serve } from "@hono/node-server";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ProbeConfig } from "./config.ts";
import { createProbeApp, createProbeService, type ProbeService } from "./app.ts";

export type RunningProbe = {
  url: string;
  service: ProbeService;
  /**
   * Stops accepting connections, answers new requests on open ones 503, lets every check in flight
   * finish within its own deadline, closes every SMTP session with QUIT, then closes the server.
   * The self-audit (started with the server) stops at once.
   */
  close(): Promise<void>;
};

export async function startProbeServer(config: ProbeConfig): Promise<RunningProbe> {
  const service = createProbeService(config);
  const app = createProbeApp(service);
  service.audit.start();
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: config.port, hostname: config.listenHost }, () => resolve(s as Server));
    s.once("error", (err) => {
      service.audit.close();
      reject(err);
    });
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(":") ? `[${address}]` : address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`,
    service,
    close: () =>
      (closing ??= (async () => {
        service.draining = true;
        service.audit.close();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await service.scheduler.drained();
        await service.scheduler.close();
        server.closeAllConnections();
        await closed;
      })()),
  };
}
