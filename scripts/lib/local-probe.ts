/**
 * The SMTP probe `npm start` runs in its own process: configured from the environment's PROBE_* settings as
 * probe/main.ts is, with its metrics listener (GET /metrics and /status on PROBE_METRICS_LISTEN), so that a local
 * stack can be scraped as a fleet is (docs/probe.md "Metrics"). Production's own PROBE_PUBLIC_IPS requirement is
 * the one thing relaxed: a laptop has no public address to audit.
 */
import { loadProbeConfig } from "../../probe/config.ts";
import { startProbeServer, type RunningProbe } from "../../probe/http/server.ts";

export function startLocalProbe(env: NodeJS.ProcessEnv, host: string, secret: string): Promise<RunningProbe> {
  const settings = Object.fromEntries(Object.entries(env).filter(([name]) => name.startsWith("PROBE_")));
  const config = loadProbeConfig(
    { PROBE_HELO_NAME: "probe.localhost", ...settings, PORT: env.PROBE_PORT ?? "8788", PROBE_LISTEN_HOST: host, PROBE_SECRET: secret },
    { publicIpsOptional: true },
  );
  return startProbeServer(config, { metrics: true });
}
