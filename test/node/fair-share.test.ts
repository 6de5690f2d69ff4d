import { describe, expect, it } from "vitest";
import { FairShare } from "../../edge/jobs/fair-share.ts";
import { workOrder, type NewLine } from "../../edge/jobs/store/job-creation.ts";
import type { BulkCandidate } from "../../edge/jobs/store/scheduling.ts";

const job = (job: string, account: string, extra: Partial<BulkCandidate> = {}): BulkCandidate => ({
  job,
  account,
  due: 10_000,
  inHand: 0,
  lastClaimAt: null,
  createdAt: 1,
  ...extra,
});

/** Plans `turns` turns of at most 200 lines; returns the accounts in turn order and the lines per account. */
function play(share: FairShare, turns: number): { order: string[]; byAccount: Record<string, number> } {
  const order: string[] = [];
  const byAccount: Record<string, number> = {};
  for (let i = 0; i < turns; i++) {
    const turn = share.take(200);
    if (!turn) break;
    order.push(turn.account);
    byAccount[turn.account] = (byAccount[turn.account] ?? 0) + turn.lines;
  }
  return { order, byAccount };
}

describe("fair shares between accounts", () => {
  it("two accounts take turns, the one never served first, whatever the order their jobs were sent in", () => {
    const share = new FairShare([job("big", "a", { lastClaimAt: 1_000, createdAt: 1 }), job("small", "b", { createdAt: 2 })], 2_000);
    expect(play(share, 6).order).toEqual(["b", "a", "b", "a", "b", "a"]);
  });

  it("three accounts get a third of the turns each", () => {
    const share = new FairShare([job("j1", "a"), job("j2", "b"), job("j3", "c")]);
    const { byAccount, order } = play(share, 9);
    expect(byAccount).toEqual({ a: 600, b: 600, c: 600 });
    // Round robin: no account twice in a row.
    for (let i = 1; i < order.length; i++) expect(order[i]).not.toBe(order[i - 1]);
  });

  it("an account whose consumers already hold more lines waits until the others have caught up", () => {
    const share = new FairShare([job("busy", "a", { inHand: 600 }), job("new", "b")]);
    expect(play(share, 5).order).toEqual(["b", "b", "b", "a", "b"]);
  });

  it("splitting a list into ten jobs buys nothing: the share is the account's, counted in lines", () => {
    // Account a: ten jobs of 100 lines; account b: one job of 2,000.
    const share = new FairShare([...Array.from({ length: 10 }, (_, i) => job(`a${i}`, "a", { due: 100 })), job("b0", "b", { due: 2_000 })]);
    const { byAccount } = play(share, 12);
    expect(Math.abs(byAccount.a! - byAccount.b!)).toBeLessThanOrEqual(200);
    expect(byAccount.a).toBeGreaterThanOrEqual(600);
  });

  it("within an account, its jobs take turns, the one served longest ago first", () => {
    const share = new FairShare([job("old", "a", { lastClaimAt: 10 }), job("new", "a", { lastClaimAt: null, createdAt: 5 })], 100);
    const jobs = Array.from({ length: 4 }, () => share.take(200)!.job);
    expect(jobs).toEqual(["new", "old", "new", "old"]);
  });

  it("a turn takes what the job has due, at most a turn's worth; with nothing due anywhere there is no turn", () => {
    const share = new FairShare([job("j1", "a", { due: 320 }), job("j2", "b", { due: 0, inHand: 50 })]);
    expect(share.take(200)).toEqual({ job: "j1", account: "a", lines: 200 });
    expect(share.take(200)).toEqual({ job: "j1", account: "a", lines: 120 });
    expect(share.take(200)).toBeNull();
    expect(share.shares()).toEqual({ a: 320, b: 50 });
    expect(share.waiting).toBe(0);
  });
});

describe("the work order of a new job's lines", () => {
  it("groups lines by domain, domains in order of first appearance, input order within a domain, so a turn takes whole domains", () => {
    const lines: NewLine[] = ["x@b.test", "y@a.test", "bad", "z@b.test", "w@a.test"].map((email) => ({
      email,
      domain: email.includes("@") ? email.slice(email.indexOf("@") + 1) : "",
      duplicateOf: null,
      done: null,
    }));
    const seq = workOrder(lines);
    const byOrder = lines.map((l, i) => [seq[i]!, l.email] as const).sort((a, b) => a[0] - b[0]).map(([, e]) => e);
    expect(byOrder).toEqual(["x@b.test", "z@b.test", "y@a.test", "w@a.test", "bad"]);
    expect([...seq].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4]);
  });
});
