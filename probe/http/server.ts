/**
 * Runs the probe's HTTP service on @hono/node-server, and with `metrics` its metrics listener (PROBE_METRICS_LISTEN),
 * as production runs it: used by probe/main.ts and `npm start` (both with metrics) and by tests.
 */
import { serve } from "@hono/node-server";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { probeOrigin } from "../../shared/probe-contract.ts";
import type { ProbeConfig } from "../config.ts";
import { createProbeApp, createProbeService, type ProbeService } from "./app.ts";
import { startMetricsServer, type MetricsServer } from "./metrics.ts";

export type RunningProbe = {
  url: string;
  /** GET /metrics on the metrics listener; null when it was not asked for or PROBE_METRICS_LISTEN is off. */
  metricsUrl: string | null;
  service: ProbeService;
  /**
   * Stops accepting connections, answers new requests on open ones 503, lets every check in flight
   * finish within its own deadline, closes every SMTP session with QUIT, then closes the server.
   * The self-audit (started with the server) stops at once.
   */
  close(): Promise<void>;
};

export type ProbeServerOptions = {
  /** The origins the Worker signs for; default: the configuration's (PROBE_ORIGIN), else this probe's loopback URLs on its port. */
  origins?: readonly string[];
  /** Start the metrics listener too (PROBE_METRICS_LISTEN), as production does. */
  metrics?: boolean;
};

/** Without PROBE_ORIGIN a probe answers requests signed for its own loopback URLs only: a local stack, a test. */
function loopbackOrigins(listenHost: string, port: number): string[] {
  const names = ["127.0.0.1", "localhost", "[::1]"];
  if (!["0.0.0.0", "::", "127.0.0.1", "::1", "localhost"].includes(listenHost)) names.push(listenHost.includes(":") ? `[${listenHost}]` : listenHost);
  return names.map((name) => probeOrigin(`http://${name}:${port}`));
}

export async function startProbeServer(config: ProbeConfig, options: ProbeServerOptions = {}): Promise<RunningProbe> {
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
  service.origins = [...(options.origins ?? config.origins ?? loopbackOrigins(config.listenHost, port))];
  let metrics: MetricsServer | null = null;
  try {
    if (options.metrics && config.metricsListen) metrics = await startMetricsServer(service, config.metricsListen.host, config.metricsListen.port);
  } catch (err) {
    service.audit.close();
    await service.scheduler.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw err;
  }
  const host = address.includes(":") ? `[${address}]` : address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`,
    metricsUrl: metrics?.url ?? null,
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
        await metrics?.close();
      })()),
  };
}
