/**
 * details.mx_provider: the table of MX host suffixes (shared/email/mx-providers.ts), and what it changes in a
 * verdict: at a provider that accepts every recipient at RCPT time (Yahoo, Microsoft 365), an accepted address
 * is never `valid` without a catch-all test that says the server refuses a random address.
 */
import { describe, expect, it } from "vitest";
import { MX_PROVIDER_SUFFIXES, mxProvider, providerOfHost } from "../../shared/email/mx-providers.ts";
import type { ProbeResponse } from "../../shared/probe-contract.ts";
import { completeVerification, prepareAddress } from "../../edge/verification/verify.ts";

describe("providerOfHost", () => {
  it.each([
    ["aspmx.l.google.com", "google"],
    ["ALT1.ASPMX.L.GOOGLE.COM.", "google"],
    ["gmail-smtp-in.l.google.com", "google"],
    ["example-com.mail.protection.outlook.com", "microsoft"],
    ["hotmail-com.olc.protection.outlook.com", "microsoft"],
    ["mta5.am0.yahoodns.net", "yahoo"],
    ["mx-aol.mail.gm0.yahoodns.net", "yahoo"],
    ["mx01.mail.icloud.com", "apple"],
    ["mx.zoho.eu", "zoho"],
    ["in1-smtp.messagingengine.com", "fastmail"],
    ["mail.protonmail.ch", "proton"],
    ["mx.yandex.net", "yandex"],
    ["mxs.mail.ru", "mailru"],
    ["mx00.gmx.net", "gmx"],
    ["mx00.kundenserver.de", "ionos"],
    ["mx1.mail.ovh.net", "ovh"],
    ["mx0a-00123401.pphosted.com", "proofpoint"],
    ["eu-smtp-inbound-1.mimecast.com", "mimecast"],
    ["d123456a.ess.barracudanetworks.com", "barracuda"],
    ["mx1.hc123-45.iphmx.com", "cisco"],
    ["in.tmes.trendmicro.eu", "trendmicro"],
  ])("%s is %s", (host, provider) => {
    expect(providerOfHost(host)).toBe(provider);
  });

  it.each(["mail.example.org", "google.com.attacker.example", "notgoogle.com", "outlook.com.evil.test", "localhost", ""])("%s is nobody's", (host) => {
    expect(providerOfHost(host)).toBeNull();
  });

  it("the table is data: lower-case suffixes of at least two labels, each once, names short and lower-case", () => {
    const suffixes = MX_PROVIDER_SUFFIXES.map(([s]) => s);
    expect(new Set(suffixes).size).toBe(suffixes.length);
    for (const [suffix, name] of MX_PROVIDER_SUFFIXES) {
      expect(suffix).toMatch(/^[a-z0-9-]+(\.[a-z0-9-]+)+$/);
      expect(name).toMatch(/^[a-z0-9]{2,16}$/);
    }
  });
});

describe("mxProvider", () => {
  it("takes the most preferred host that matches, whatever the order given", () => {
    expect(mxProvider([{ host: "backup.example.net", preference: 5 }, { host: "mx1.example-com.pphosted.com", preference: 10 }, { host: "aspmx.l.google.com", preference: 20 }])).toBe("proofpoint");
    expect(mxProvider([{ host: "aspmx.l.google.com", preference: 20 }, { host: "eu-smtp-inbound-1.mimecast.com", preference: 10 }])).toBe("mimecast");
    expect(mxProvider([])).toBeNull();
  });
});

describe("a verdict at a provider that accepts every recipient at RCPT time", () => {
  const probe = (catchAll: boolean | null): ProbeResponse => ({
    outcome: "accepted",
    catch_all: catchAll,
    catch_all_cached: false,
    reply: { code: 250, enhanced_code: "2.1.5", text: "Recipient OK" },
    mx_host: "mx",
    mx_address: "192.0.2.1",
    tls: true,
    pipelining: true,
    attempts: [],
    elapsed_ms: 40,
  });
  const verdict = (mx: string, catchAll: boolean | null) => {
    const prepared = prepareAddress("someone@customer.example");
    if (!prepared.ok) throw new Error("bad address");
    const dns = { status: "mx" as const, hosts: [{ host: mx, preference: 10, addresses: ["192.0.2.1"] }], ms: 3, cached: false };
    return completeVerification(prepared, dns as never, { ok: true, response: probe(catchAll), ms: 40 });
  };

  it.each(["mta7.am0.yahoodns.net", "customer-example.mail.protection.outlook.com"])("%s: accepted with no catch-all answer is risky catch-all, never valid", (mx) => {
    const r = verdict(mx, null);
    expect([r.classification, r.reason, r.checks.accepts_any_email, r.details?.mx_provider]).toEqual(["risky", "catch_all", true, mx.includes("yahoo") ? "yahoo" : "microsoft"]);
    expect(verdict(mx, true).classification).toBe("risky");
    // A tenant that refuses a random address (Directory-Based Edge Blocking on) confirms the mailbox.
    expect(verdict(mx, false)).toMatchObject({ classification: "valid", reason: "deliverable" });
  });

  it("elsewhere an unanswered catch-all test does not make an accepted address catch-all", () => {
    expect(verdict("mx.customer.example", null)).toMatchObject({ classification: "valid", details: { mx_provider: null } });
  });
});
