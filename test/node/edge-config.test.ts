/** The Worker's configuration (README "Configuration"): defaults, the probe list, and loud failures. */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../edge/env.ts";

const base = { DATABASE_URL: "http://127.0.0.1:8080" };

describe("loadConfig", () => {
  it("defaults: Cloudflare's DoH, no probe, one credit per lookup, 3 s per database request", () => {
    expect(loadConfig({ ...base })).toMatchObject({
      DOH_URL: "https://cloudflare-dns.com/dns-query",
      PROBE_URL: [],
      LOOKUP_COST: 1,
      DATABASE_TIMEOUT_MS: 3000,
    });
    expect(loadConfig({ ...base, DATABASE_TIMEOUT_MS: "750" }).DATABASE_TIMEOUT_MS).toBe(750);
  });

  it("takes one probe URL or a comma-separated list, ignoring blanks", () => {
    const secret = "s".repeat(32);
    expect(loadConfig({ ...base, PROBE_URL: "https://p1.example.net", PROBE_SECRET: secret }).PROBE_URL).toEqual(["https://p1.example.net"]);
    expect(loadConfig({ ...base, PROBE_URL: " https://p1.example.net, https://p2.example.net ,", PROBE_SECRET: secret }).PROBE_URL).toEqual([
      "https://p1.example.net",
      "https://p2.example.net",
    ]);
    expect(loadConfig({ ...base, PROBE_URL: "  " }).PROBE_URL).toEqual([]);
  });

  it.each([
    [{ DATABASE_URL: "not a url" }, /DATABASE_URL must be a URL/],
    [{ ...base, PROBE_URL: "https://p1.example.net,nope", PROBE_SECRET: "s".repeat(32) }, /PROBE_URL must be a URL or a comma-separated list/],
    [{ ...base, PROBE_URL: "https://p1.example.net" }, /PROBE_SECRET is required when PROBE_URL is set/],
    [{ ...base, LOOKUP_COST: "-1" }, /LOOKUP_COST/],
    [{ ...base, DATABASE_TIMEOUT_MS: "0" }, /DATABASE_TIMEOUT_MS/],
    [{ ...base, DATABASE_TIMEOUT_MS: "3 s" }, /DATABASE_TIMEOUT_MS/],
  ])("refuses %j with a message naming the setting", (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});
