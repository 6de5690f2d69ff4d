/**
 * Where job callbacks may go (edge/webhooks/delivery.ts, docs/jobs.md "Callbacks"): the URL rules at creation,
 * and the DNS check at delivery against the DoH fixture in RFC 8484 wire format. Every refusal here
 * happens before any connection: the refused hosts exist only in the fixture's zone.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkCallbackUrl, deliverCallback } from "../../edge/webhooks/delivery.ts";
import { generateWebhookSecret } from "../../edge/webhooks/signing.ts";
import { startDohServer, type DohServer } from "../fixtures/doh-server.ts";
import { testZone } from "../fixtures/test-zone.ts";

describe("checkCallbackUrl", () => {
  it.each([
    ["userinfo", "https://user:pass@hooks.example.com/x", "callback_url must not contain a user name or password"],
    ["a user name alone", "https://user@hooks.example.com/x", "callback_url must not contain a user name or password"],
    ["a port other than 443", "https://hooks.example.com:8443/x", "callback_url must use the default https port (443)"],
    ["port 80 on https", "https://hooks.example.com:80/x", "callback_url must use the default https port (443)"],
    ["localhost with a trailing dot", "https://localhost./x", "callback_url must point at a public host name"],
    ["a .internal name with a trailing dot", "https://db.internal./x", "callback_url must point at a public host name"],
    ["a single label with a trailing dot", "https://intranet./x", "callback_url must point at a public host name"],
  ])("refuses %s", (_name, url, error) => {
    expect(checkCallbackUrl(url, false)).toEqual({ ok: false, error });
  });

  it("accepts port 443 written out, and drops it and a trailing dot from the URL it keeps", () => {
    expect(checkCallbackUrl("https://hooks.example.com:443/x?a=1", false)).toEqual({ ok: true, url: "https://hooks.example.com/x?a=1" });
    expect(checkCallbackUrl("https://hooks.example.com./x", false)).toEqual({ ok: true, url: "https://hooks.example.com/x" });
  });

  it("tests (private targets allowed) may use http and any port, never userinfo", () => {
    expect(checkCallbackUrl("http://127.0.0.1:9999/hook", true)).toEqual({ ok: true, url: "http://127.0.0.1:9999/hook" });
    expect(checkCallbackUrl("http://u:p@127.0.0.1:9999/hook", true)).toMatchObject({ ok: false });
  });
});

describe("deliverCallback's DNS check", () => {
  let doh: DohServer;
  beforeAll(async () => {
    doh = await startDohServer({ zone: testZone });
  });
  afterAll(() => doh.close());

  const deliver = async (url: string) =>
    deliverCallback({ url, secret: generateWebhookSecret(), eventId: "evt_test", body: "{}", dohUrl: doh.url, allowPrivate: false });

  it.each([
    ["the AAAA lookup fails (A is public)", "https://aaaa-fails.callback.test/hook", "callback refused: its host name's AAAA lookup failed"],
    ["the A lookup fails (AAAA is public)", "https://a-fails.callback.test/hook", "callback refused: its host name's A lookup failed"],
    ["both lookups fail", "https://servfail.test/hook", "callback refused: its host name's A and AAAA lookup failed"],
    ["one of its addresses is private", "https://private.callback.test/hook", "callback refused: its host name resolves to a private address"],
    ["it does not exist", "https://nx.test/hook", "callback refused: its host name has no address"],
  ])("refuses a host when %s", async (_name, url, error) => {
    expect(await deliver(url)).toEqual({ ok: false, status: null, error });
  });

  it("checks a stored URL against today's rules before anything else", async () => {
    expect(await deliver("https://user:pass@public.callback.test/hook")).toEqual({
      ok: false,
      status: null,
      error: "callback refused: callback_url must not contain a user name or password",
    });
    const queriesBefore = doh.queries.length;
    await deliver("https://public.callback.test:8443/hook");
    expect(doh.queries.length).toBe(queriesBefore);
  });
});
