/**
 * The probe as a process: configuration from the environment (docs/probe.md "The SMTP probe"), the HTTP
 * service, and a clean stop on SIGTERM/SIGINT: no new work, the checks in flight answered within
 * their own deadlines (at most 120 s), every SMTP session closed with QUIT, then exit.
 */
import { loadProbeConfig, ProbeConfigError } from "./config.ts";
import { startProbeServer } from "./http/server.ts";

// A promise nobody awaited that fails is one check's bug, not a reason to drop every check in
// flight: log it and keep serving. An uncaught exception is different (Node's state may be
// broken): the default, log and exit, stands, and the container's restart policy brings it back.
process.on("unhandledRejection", (reason) => {
  console.error(JSON.stringify({ level: "error", msg: "unhandled rejection", error: reason instanceof Error ? reason.name : typeof reason }));
});

try {
  const config = loadProbeConfig(process.env);
  const probe = await startProbeServer(config, { metrics: true });
  console.log(
    JSON.stringify({
      level: "info",
      msg: "probe listening",
      url: probe.url,
      origins: probe.service.origins,
      metrics: probe.metricsUrl,
      helo: config.heloName,
      smtp_port: config.smtpPort,
      public_ips: config.publicIps,
      audit: config.publicIps.length > 0,
    }),
  );
  const stop = () => {
    const { checks_in_flight } = probe.service.scheduler.stats();
    console.log(JSON.stringify({ level: "info", msg: "probe draining", checks_in_flight }));
    void probe.close().then(() => {
      console.log(JSON.stringify({ level: "info", msg: "probe stopped" }));
      process.exit(0);
    });
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
} catch (err) {
  console.error(err instanceof ProbeConfigError ? err.message : `probe failed to start: ${String(err)}`);
  process.exit(1);
}
