/**
 * The receiver table (shared/email/receivers.ts): one list of MX host suffixes names who runs a host
 * (details.mx_provider) and its receiver family, each provider has its family and its columns, and no second
 * suffix table exists anywhere in the product. What a column changes in a verdict: at a provider where RCPT proves
 * nothing (Yahoo, Microsoft 365), an accepted address is never `valid` without a catch-all test that says the server
 * refuses a random address.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { MX_PROVIDERS, MX_SUFFIXES, RECEIVER_FAMILIES, RECEIVER_POLICIES, mxProvider, rcptProvesNothing, receiverFamily, receiverOfHost, receiverPolicy } from "../../shared/email/receivers.ts";
import type { ProbeResponse } from "../../shared/probe-contract.ts";
import { completeVerification, prepareAddress } from "../../edge/verification/verify.ts";

describe("receiverOfHost: who runs a host", () => {
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
    expect(receiverOfHost(host).provider).toBe(provider);
  });

  it.each(["mail.example.org", "google.com.attacker.example", "notgoogle.com", "outlook.com.evil.test", "localhost", ""])("%s is nobody's, and self-hosted", (host) => {
    expect(receiverOfHost(host)).toEqual({ provider: null, family: "self-hosted" });
  });

  it("names the provider and the family from one row: a narrower suffix refines a provider's family", () => {
    expect(receiverOfHost("contoso-com.mail.protection.outlook.com")).toEqual({ provider: "microsoft", family: "microsoft-eop" });
    expect(receiverOfHost("hotmail-com.olc.protection.outlook.com")).toEqual({ provider: "microsoft", family: "outlook-consumer" });
    expect(receiverOfHost("mx1.hotmail.com")).toEqual({ provider: "microsoft", family: "self-hosted" });
    expect(receiverOfHost("mx01.mail.icloud.com")).toEqual({ provider: "apple", family: "self-hosted" });
    expect(receiverOfHost("cluster-a.mailcontrol.com")).toEqual({ provider: "forcepoint", family: "forcepoint" });
  });

  it("the table is data: lower-case suffixes of at least two labels, each once; names short and lower-case; every family a row's", () => {
    const suffixes = MX_SUFFIXES.map(([s]) => s);
    expect(new Set(suffixes).size).toBe(suffixes.length);
    for (const [suffix, name, family] of MX_SUFFIXES) {
      expect(suffix).toMatch(/^[a-z0-9-]+(\.[a-z0-9-]+)+$/);
      expect(name).toMatch(/^[a-z0-9]{2,16}$/);
      expect(RECEIVER_FAMILIES).toContain(family ?? MX_PROVIDERS[name].family);
    }
    // Every provider has a suffix, and every family but self-hosted is reached by one.
    expect(new Set(MX_SUFFIXES.map(([, name]) => name))).toEqual(new Set(Object.keys(MX_PROVIDERS)));
    const reached = new Set(MX_SUFFIXES.map(([suffix]) => receiverOfHost(suffix).family));
    for (const { family } of RECEIVER_POLICIES) if (family !== "self-hosted") expect(reached, family).toContain(family);
  });
});

describe("rcptProvesNothing: a provider's column", () => {
  it("is Yahoo's and Microsoft's, and nobody else's (unknown and stored names included)", () => {
    expect(Object.keys(MX_PROVIDERS).filter((p) => rcptProvesNothing(p)).sort()).toEqual(["microsoft", "yahoo"]);
    for (const name of [null, "", "nobody", "toString", "__proto__"]) expect(rcptProvesNothing(name)).toBe(false);
  });

  it("agrees with the families: one answered as catch-all without a conversation (probe accepts_all) is only ever a provider's where RCPT proves nothing", () => {
    const acceptsAll = MX_SUFFIXES.filter(([suffix]) => receiverPolicy(receiverOfHost(suffix).family).probe === "accepts_all");
    expect(acceptsAll.length).toBeGreaterThan(0);
    for (const [suffix, provider] of acceptsAll) expect(MX_PROVIDERS[provider].rcptProvesNothing, suffix).toBe(true);
  });
});

const root = fileURLToPath(new URL("../..", import.meta.url));
const SUFFIXES = new Set(MX_SUFFIXES.map(([s]) => s));

/** The table's suffixes a source file holds as table data: elements of an array literal, or names of an object literal's properties. */
function suffixesHeldAsData(text: string, fileName: string): string[] {
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, fileName.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) && SUFFIXES.has(node.text.toLowerCase())) {
      const parent = node.parent;
      if (ts.isArrayLiteralExpression(parent) || (ts.isPropertyAssignment(parent) && parent.name === node)) found.add(node.text.toLowerCase());
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return [...found].sort();
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === "node_modules" || name.startsWith(".")) return [];
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|tsx|mts|mjs)$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

describe("one suffix table", () => {
  it("the scan sees a table: the real one, and one written as a Map, a tuple list or an object's keys", () => {
    expect(suffixesHeldAsData(readFileSync(join(root, "shared/email/receivers.ts"), "utf8"), "receivers.ts")).toEqual([...SUFFIXES].sort());
    expect(suffixesHeldAsData('const M = new Map([["pphosted.com", "proofpoint"], ["iphmx.com", "cisco"]]);', "a.ts")).toEqual(["iphmx.com", "pphosted.com"]);
    expect(suffixesHeldAsData('export const G = { "google.com": 1, "smtp.goog": 2 };', "b.ts")).toEqual(["google.com", "smtp.goog"]);
    expect(suffixesHeldAsData('const row = { suffixes: ["yahoodns.net", "yahoo.com"] };', "c.ts")).toEqual(["yahoo.com", "yahoodns.net"]);
    // A single mail domain, or names held as values (a misspelling's intended domain), is no table.
    expect(suffixesHeldAsData('const s = new Set(["gmail.com", "googlemail.com"]); const t = { intended: "yahoo.com", o: "hotmail.com" };', "d.ts")).toEqual(["googlemail.com"]);
  });

  it("no product file but shared/email/receivers.ts holds two or more MX host suffixes as table data", () => {
    const second = ["edge", "probe", "shared", "scripts", "client"]
      .flatMap((d) => sources(join(root, d)))
      .map((path) => ({ path: relative(root, path), found: suffixesHeldAsData(readFileSync(path, "utf8"), path) }))
      .filter((f) => f.path !== join("shared", "email", "receivers.ts") && f.found.length >= 2)
      .map((f) => `${f.path}: ${f.found.join(", ")}`);
    expect(second).toEqual([]);
  });
});

describe("mxProvider and receiverFamily", () => {
  it("mxProvider takes the most preferred host that matches, whatever the order given", () => {
    expect(mxProvider([{ host: "backup.example.net", preference: 5 }, { host: "mx1.example-com.pphosted.com", preference: 10 }, { host: "aspmx.l.google.com", preference: 20 }])).toBe("proofpoint");
    expect(mxProvider([{ host: "aspmx.l.google.com", preference: 20 }, { host: "eu-smtp-inbound-1.mimecast.com", preference: 10 }])).toBe("mimecast");
    expect(mxProvider([])).toBeNull();
  });

  it("receiverFamily takes the most preferred host's family, the one the probe dials first, matched or not", () => {
    expect(receiverFamily([{ host: "backup.example.org", preference: 20 }, { host: "aspmx.l.google.com", preference: 10 }])).toBe("google");
    expect(receiverFamily([{ host: "mx.example.org", preference: 10 }, { host: "aspmx.l.google.com", preference: 20 }])).toBe("self-hosted");
    expect(receiverFamily([])).toBe("self-hosted");
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
