/**
 * wrangler.toml's [[ratelimits]] are what Cloudflare enforces; edge/rate-limits.ts states the same
 * numbers to clients (docs/api.md "Rate limits"). This fails when the two disagree, in any environment.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { FAILED_AUTHENTICATION_LIMIT, RATE_LIMITS } from "../../edge/rate-limits.ts";

// Loaded by Node itself: the test runner would transform wrangler's 15 MB bundle first.
const { unstable_readConfig } = createRequire(import.meta.url)("wrangler") as typeof import("wrangler");
/** A [[ratelimits]] entry as wrangler reads it (its Config type comes from a package wrangler bundles). */
type DeclaredRateLimit = { name: string; namespace_id: string; simple: { limit: number; period: number } };
const configPath = fileURLToPath(new URL("../../wrangler.toml", import.meta.url));

const stated = [...Object.values(RATE_LIMITS), FAILED_AUTHENTICATION_LIMIT]
  .map((policy) => ({ name: policy.binding, simple: { limit: policy.limit, period: policy.periodSeconds } }))
  .sort((a, b) => a.name.localeCompare(b.name));

describe.each([["local (top level)", undefined], ["production", "production"]])("wrangler.toml, %s", (_label, env) => {
  it("declares every rate limiter with the numbers the Worker states", () => {
    const ratelimits = unstable_readConfig({ config: configPath, env }).ratelimits as DeclaredRateLimit[];
    const declared = ratelimits
      .map(({ name, simple }) => ({ name, simple: { limit: simple.limit, period: simple.period } }))
      .sort((a, b) => a.name.localeCompare(b.name));
    expect(declared).toEqual(stated);
    expect(new Set(ratelimits.map((r) => r.namespace_id)).size).toBe(ratelimits.length);
  });
});
