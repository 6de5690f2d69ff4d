/** The Worker's configuration (docs/operations.md "Configuration"): defaults, the probe list, and loud failures. */
import { TEST_PROBE_SECRET } from "../fixtures/secrets.ts";
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
    const secret = TEST_PROBE_SECRET;
    expect(loadConfig({ ...base, PROBE_URL: "https://p1.example.net", PROBE_SECRET: secret }).PROBE_URL).toEqual(["https://p1.example.net"]);
    expect(loadConfig({ ...base, PROBE_URL: " https://p1.example.net, https://p2.example.net ,", PROBE_SECRET: secret }).PROBE_URL).toEqual([
      "https://p1.example.net",
      "https://p2.example.net",
    ]);
    expect(loadConfig({ ...base, PROBE_URL: "  " }).PROBE_URL).toEqual([]);
  });

  it.each([
    [{ DATABASE_URL: "not a url" }, /DATABASE_URL must be a URL/],
    [{ ...base, PROBE_URL: "https://p1.example.net,nope", PROBE_SECRET: TEST_PROBE_SECRET }, /PROBE_URL must be a URL or a comma-separated list/],
    [{ ...base, PROBE_URL: "https://p1.example.net" }, /PROBE_SECRET is required when PROBE_URL is set/],
    [{ ...base, PROBE_URL: "http://probe1.example.net:8788", PROBE_SECRET: TEST_PROBE_SECRET }, /PROBE_URL must be https \(http only to a loopback address/],
    [{ ...base, PROBE_URL: "http://10.0.0.5:8788", PROBE_SECRET: TEST_PROBE_SECRET }, /PROBE_URL must be https/],
    [{ ...base, PROBE_URL: "https://p1.example.net", PROBE_SECRET: "aaaaaaaaaaaaaaaa" }, /PROBE_SECRET must hold at least 32 random bytes/],
    [{ ...base, PROBE_URL: "https://p1.example.net", PROBE_SECRET: "a".repeat(64) }, /PROBE_SECRET repeats a shorter string/],
    [{ ...base, PROBE_URL: "https://p1.example.net", PROBE_SECRET: "password".repeat(8) }, /PROBE_SECRET repeats a shorter string/],
    [{ ...base, PROBE_URL: "https://p1.example.net", PROBE_SECRET: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab" }, /PROBE_SECRET is too regular/],
    [{ ...base, LOOKUP_COST: "-1" }, /LOOKUP_COST/],
    [{ ...base, DATABASE_TIMEOUT_MS: "0" }, /DATABASE_TIMEOUT_MS/],
    [{ ...base, DATABASE_TIMEOUT_MS: "3 s" }, /DATABASE_TIMEOUT_MS/],
  ])("refuses %j with a message naming the setting", (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});
