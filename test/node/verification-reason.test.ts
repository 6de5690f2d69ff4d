import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { describe, expect, it } from "vitest";
import { VERIFICATION_REASONS, type EmailVerificationResult, type VerificationReason } from "../../shared/api.ts";
import { buildVerificationResult, verificationReason, WARNINGS, type VerificationFacts } from "../../shared/email/verdict.ts";
import type { SmtpOutcome } from "../../shared/smtp-outcome.ts";
import { MIGRATIONS_FOLDER } from "../../scripts/lib/database.ts";

const base: VerificationFacts = {
  email: "ana@example.com",
  syntax: { ok: true, quotedLocal: false, nonAsciiLocal: false },
  disposable: false,
  freeProvider: false,
  roleAccount: false,
  typoSuggestion: null,
  mx: "verified",
  smtp: { status: "deliverable", catchAll: false },
};

/** A result as the Worker builds it, without its reason: the facts, and the SMTP outcome in details. */
function result(facts: Partial<VerificationFacts>, outcome: SmtpOutcome | null): Omit<EmailVerificationResult, "reason"> {
  return {
    ...buildVerificationResult({ ...base, ...facts }),
    details: {
      domain: "example.com",
      mx_hosts: [],
      implicit_mx: false,
      smtp_host: null,
      smtp_reply: null,
      smtp_outcome: outcome,
      smtp_tls: null,
      dns_ms: null,
      smtp_ms: null,
      dns_cached: null,
      catch_all_cached: null,
      mx_provider: null,
    },
  };
}

/** One result per reason, in the vocabulary's order, each the case its precedence says. */
const CASES: [VerificationReason, Omit<EmailVerificationResult, "reason">][] = [
  ["syntax", result({ syntax: { ok: false, error: "bad" }, mx: "not_checked", smtp: { status: "not_checked", catchAll: null } }, null)],
  ["no_mail_domain", result({ mx: "nxdomain", smtp: { status: "not_checked", catchAll: null }, disposable: true }, null)],
  ["mailbox_not_found", result({ smtp: { status: "rejected", catchAll: false }, disposable: true }, "mailbox_not_found")],
  // A typo-squat on a disposable list (gmial.com): the typo is what the user can act on.
  ["typo", result({ typoSuggestion: "ana@gmail.com", disposable: true, smtp: { status: "deliverable", catchAll: true } }, "accepted")],
  ["disposable", result({ disposable: true, smtp: { status: "deliverable", catchAll: true } }, "accepted")],
  ["catch_all", result({ smtp: { status: "deliverable", catchAll: true } }, "accepted")],
  ["policy_block", result({ smtp: { status: "assumed", catchAll: null } }, "policy_block")],
  // The receiver refused our probe (a block), not the mailbox: risky, with the warning that says so.
  ["probe_refused", result({ smtp: { status: "probe_refused", catchAll: null } }, "blocked")],
  ["temporary_failure", result({ smtp: { status: "assumed", catchAll: null } }, "timeout")],
  ["mailbox_full", result({ smtp: { status: "mailbox_full", catchAll: false } }, "mailbox_full")],
  ["connection_failed", result({ smtp: { status: "assumed", catchAll: null } }, "connection_failed")],
  ["smtp_inconclusive", result({ smtp: { status: "assumed", catchAll: null } }, "rejected_unclear")],
  ["receiver_budget_spent", result({ smtp: { status: "budget_spent", catchAll: null } }, "budget_spent")],
  ["provider_forbids_probing", result({ smtp: { status: "not_probed", catchAll: null } }, "not_probed")],
  ["dns_failure", result({ mx: "assumed", smtp: { status: "not_checked", catchAll: null } }, null)],
  ["no_smtp_check", result({ smtp: { status: "not_checked", catchAll: null } }, "probe_unreachable")],
  ["deliverable", result({ syntax: { ok: true, quotedLocal: true, nonAsciiLocal: false } }, "accepted")],
];

describe("verificationReason", () => {
  it.each(CASES)("%s", (reason, r) => {
    expect(verificationReason(r)).toBe(reason);
  });

  it("the cases cover the vocabulary, in its order of precedence", () => {
    expect(CASES.map(([reason]) => reason)).toEqual([...VERIFICATION_REASONS]);
  });

  it("a typo of a disposable-listed domain warns of the typo, not of a disposable provider", () => {
    const r = result({ typoSuggestion: "ana@gmail.com", disposable: true }, "accepted");
    expect(r.warnings).toContain("The domain looks like a typo of a common provider; see checks.typo_suggestion.");
    expect(r.warnings).not.toContain("The domain is a disposable email provider.");
    expect([r.checks.disposable, r.classification]).toEqual([true, "risky"]);
  });

  it("a greylisting answer is a temporary failure too, and a refused target no SMTP check", () => {
    expect(verificationReason(result({ smtp: { status: "assumed", catchAll: null } }, "temporary_failure"))).toBe("temporary_failure");
    expect(verificationReason(result({ smtp: { status: "assumed", catchAll: null } }, "protocol_error"))).toBe("smtp_inconclusive");
    expect(verificationReason(result({ smtp: { status: "assumed", catchAll: null } }, "refused_target"))).toBe("no_smtp_check");
  });

  it("a probe refused by the receiver (a block) is risky with its own warning, never the mailbox's answer", () => {
    const r = result({ smtp: { status: "probe_refused", catchAll: null } }, "blocked");
    expect(r).toMatchObject({ classification: "risky", warnings: [WARNINGS.probeRefused] });
    expect(verificationReason(r)).toBe("probe_refused");
    expect(r.checks.smtp_deliverable).toBeNull();
    expect(r.errors).toEqual([]);
  });

  it("a receiver not probed because it accepts every address (yahoo) is catch-all, without an accepted RCPT", () => {
    const r = result({ smtp: { status: "not_probed", catchAll: true } }, "not_probed");
    expect(r.checks.smtp_deliverable).toBeNull();
    expect(verificationReason(r)).toBe("catch_all");
  });
});

/**
 * Lines answered before 0009 could not carry the outcomes that came later (budget_spent, not_probed:
 * the receiver policy of issue 26); every line since stores its reason, so 0009's SQL mirror never
 * sees them and needs no successor.
 */
const OUTCOMES_AFTER_0009: readonly (SmtpOutcome | null)[] = ["budget_spent", "not_probed", "blocked"];
/** Reasons added to the vocabulary since 0009 (typo): the back-fill gives those results the reason of its day. */
const REASONS_SINCE_0009: readonly VerificationReason[] = ["typo"];
const CASES_BEFORE_0009 = CASES.filter(([reason, r]) => !OUTCOMES_AFTER_0009.includes(r.details!.smtp_outcome) && !REASONS_SINCE_0009.includes(reason));

describe("cases for the 0009 back-fill", () => {
  it("leave out only the reasons that came after it", () => {
    expect(CASES.filter((c) => !CASES_BEFORE_0009.includes(c)).map(([reason]) => reason)).toEqual(["typo", "probe_refused", "receiver_budget_spent", "provider_forbids_probing"]);
  });
});

describe("the 0009 migration's back-fill", () => {
  it("gives lines answered before it the reason the function gives, and their jobs the counts", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reason-backfill-"));
    const client = createClient({ url: `file:${join(dir, "db.sqlite")}` });
    const migrations = readdirSync(MIGRATIONS_FOLDER)
      .filter((f) => f.endsWith(".sql"))
      .sort();
    const run = async (file: string) => {
      for (const statement of readFileSync(join(MIGRATIONS_FOLDER, file), "utf8").split("--> statement-breakpoint")) {
        if (statement.trim()) await client.execute(statement);
      }
    };
    const upTo = migrations.findIndex((f) => f.startsWith("0009_"));
    expect(upTo).toBeGreaterThan(0);
    for (const file of migrations.slice(0, upTo)) await run(file);
    // Lines as the code before 0009 wrote them: done, with their result, no reason.
    await client.execute(`insert into accounts (id, name, credit_balance) values ('acc_1', 'a', 0)`);
    await client.execute(`insert into verification_jobs (id, account_id, status, total, processed, smtp_timeout, request_hash, completed_at)
      values ('job_1', 'acc_1', 'completed', ${CASES_BEFORE_0009.length + 1}, ${CASES_BEFORE_0009.length + 1}, 10, 'h', 1700000000000)`);
    for (const [i, [, r]] of CASES_BEFORE_0009.entries()) {
      await client.execute({
        sql: `insert into verification_job_items (job_id, position, email, state, classification, result) values ('job_1', ?, ?, 'done', ?, ?)`,
        args: [i, r.email, r.classification, JSON.stringify(r)],
      });
    }
    await client.execute({
      sql: `insert into verification_job_items (job_id, position, email, state, classification, result) values ('job_1', ?, 'x@example.com', 'done', 'valid', ?)`,
      args: [CASES_BEFORE_0009.length, JSON.stringify(CASES_BEFORE_0009.at(-1)![1])],
    });
    await run(migrations[upTo]!);
    const rows = (await client.execute(`select position, reason, checked_at from verification_job_items where job_id = 'job_1' order by position`)).rows;
    expect(rows.map((r) => r.reason)).toEqual([...CASES_BEFORE_0009.map(([, r]) => verificationReason(r)), "deliverable"]);
    expect(rows.every((r) => Number(r.checked_at) === 1700000000000)).toBe(true);
    const [job] = (await client.execute(`select reason_counts from verification_jobs where id = 'job_1'`)).rows;
    expect(JSON.parse(String(job!.reason_counts))).toEqual({ ...Object.fromEntries(CASES_BEFORE_0009.map(([r]) => [r, 1])), deliverable: 2 });
    client.close();
  });
});
