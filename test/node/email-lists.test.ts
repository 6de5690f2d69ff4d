/** Disposable, free-provider and role lookups (docs/api.md "The checks, in order", step 2, and "GET /v1/people") over the packaged lists. */
import disposableDomains from "disposable-email-domains-js/dist/dict/disposable_email_blocklist.json" with { type: "json" };
import freeDomains from "free-email-domains/domains.json" with { type: "json" };
import roleLocalParts from "role-based-email-addresses";
import { describe, expect, it } from "vitest";
import { isDisposableDomain, isFreeProviderDomain, isRoleAccount } from "../../shared/email/lists.ts";

describe("isDisposableDomain", () => {
  it.each([
    ["mailinator.com", true],
    ["MAILINATOR.COM", true],
    ["mailinator.com.", true],
    ["inbox.mailinator.com", true],
    ["a.b.c.mailinator.com", true],
    ["mymailinator.com", false],
    ["mailinator.co", false],
    ["mailinator.com.example.org", false],
    ["gmail.com", false],
    ["example.com", false],
    ["com", false],
    ["", false],
  ])("%s -> %s", (domain, expected) => {
    expect(isDisposableDomain(domain)).toBe(expected);
  });

  it("knows every domain the package lists", () => {
    expect(disposableDomains.length).toBeGreaterThan(5_000);
    expect(disposableDomains.filter((domain) => !isDisposableDomain(domain))).toEqual([]);
  });
});

describe("isFreeProviderDomain", () => {
  it.each([
    ["gmail.com", true],
    ["GMAIL.COM", true],
    ["gmail.com.", true],
    ["gmx.de", true],
    ["yandex.ru", true],
    ["proton.me", true],
    // Exact match only: a subdomain of a provider's name is not that provider's mailbox.
    ["corp.gmail.com", false],
    ["example.com", false],
    ["anthropic.com", false],
  ])("%s -> %s", (domain, expected) => {
    expect(isFreeProviderDomain(domain)).toBe(expected);
  });

  it("knows every domain the package lists", () => {
    expect(freeDomains.filter((domain) => !isFreeProviderDomain(domain))).toEqual([]);
  });
});

describe("isRoleAccount", () => {
  it.each([
    ["info", true],
    ["Info", true],
    ["SALES", true],
    ["postmaster", true],
    ["support", true],
    ["sales+emea", true],
    ["ana", false],
    ["ana.lovelace", false],
    ["info.ana", false],
    ["+info", false],
    ["", false],
  ])("%s -> %s", (local, expected) => {
    expect(isRoleAccount(local)).toBe(expected);
  });

  it("knows every local part the package lists", () => {
    expect(roleLocalParts.filter((role) => !isRoleAccount(role))).toEqual([]);
  });
});
