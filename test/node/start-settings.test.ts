/**
 * `npm start` checks the Worker's settings with the Worker's own parser before it starts anything: a bad one ends
 * it at once, non-zero, with the message the Worker would have logged on every request.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

async function start(env: Record<string, string>): Promise<{ status: number; stderr: string }> {
  try {
    const { stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      timeout: 30_000,
    });
    return { status: 0, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stderr?: string };
    if (typeof failed.code !== "number") throw error;
    return { status: failed.code, stderr: failed.stderr ?? "" };
  }
}

describe("npm start and the Worker's settings", () => {
  it.each([
    ["EMAIL_MAX_AGE_SECONDS", "5", "Invalid worker configuration: EMAIL_MAX_AGE_SECONDS: Too small: expected number to be >=60"],
    ["PROBE_URL", "http://probe.example.com", "PROBE_URL must be https (http only to a loopback address, for tests and npm start)"],
  ])("%s=%s stops it before anything starts, status 1, with the Worker's message", async (name, value, message) => {
    // Ports nothing listens on: had anything started, the run would not end by itself.
    const run = await start({ [name]: value, EDGE_PORT: "1", LIBSQL_PORT: "2", PROBE_PORT: "3" });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(message);
    expect(run.stderr).not.toContain("libSQL server on");
  }, 60_000);
});
