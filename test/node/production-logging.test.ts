/**
 * docs/operations.md "Logs": production keeps our own JSON lines and nothing Cloudflare records on its own.
 * Invocation logs carry each request's URL (query values: addresses, identifiers, callback URLs) and
 * its headers; traces carry fetch URLs; Logpush and Tail Workers would ship invocation events
 * elsewhere. This pins the production configuration as wrangler itself reads it.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const { unstable_readConfig } = createRequire(import.meta.url)("wrangler") as typeof import("wrangler");
const configPath = fileURLToPath(new URL("../../wrangler.toml", import.meta.url));

type Observability = {
  enabled?: boolean;
  logs?: { enabled?: boolean; invocation_logs?: boolean };
  traces?: { enabled?: boolean };
};

describe("wrangler.toml, production logging", () => {
  const config = unstable_readConfig({ config: configPath, env: "production" }) as unknown as {
    observability?: Observability;
    logpush?: boolean;
    tail_consumers?: unknown[];
  };

  it("keeps Workers Logs on for our own lines", () => {
    expect(config.observability?.enabled).toBe(true);
    expect(config.observability?.logs?.enabled).toBe(true);
  });

  it("turns invocation logs off: they would store query strings and the Authorization header", () => {
    expect(config.observability?.logs?.invocation_logs).toBe(false);
  });

  it("records no traces and ships no invocation events elsewhere", () => {
    expect(config.observability?.traces?.enabled ?? false).toBe(false);
    expect(config.logpush ?? false).toBe(false);
    expect(config.tail_consumers ?? []).toEqual([]);
  });
});
