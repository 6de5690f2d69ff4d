/**
 * The probe as a process: configuration from the environment (README "The SMTP probe"), the HTTP
 * service, and a clean stop on SIGTERM/SIGINT (in-flight probes end at their deadlines, at most 60 s).
 */
import { loadProbeConfig, ProbeConfigError } from "./config.ts";
import { startProbeServer } from "./server.ts";

try {
  const config = loadProbeConfig(process.env);
  const probe = await startProbeServer(config);
  console.log(
    JSON.stringify({ level: "info", msg: "probe listening", url: probe.url, helo: config.heloName, smtp_port: config.smtpPort }),
  );
  const stop = () => {
    void probe.close().then(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
} catch (err) {
  console.error(err instanceof ProbeConfigError ? err.message : `probe failed to start: ${String(err)}`);
  process.exit(1);
}
