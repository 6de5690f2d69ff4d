/**
 * The reference in docs/ says what the code does: every setting of the Worker and of the probe is in
 * its table with the default the code applies, the job limits and the job engine's numbers are the
 * constants', and every relative link in the README and docs/ leads to a file and heading that
 * exist. A setting or limit changed in code without its documentation fails here.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { EdgeConfigSchema } from "../../edge/env.ts";
import { CLAIM_LEASE_MS } from "../../edge/jobs/verification/turns.ts";
import { LINE_POLICY } from "../../edge/jobs/verification/line-policy.ts";
import { LINES_PER_TRANSACTION } from "../../edge/jobs/store/job-creation.ts";
import { STALLED_JOBS_PER_RUN, TURNS_PER_STALLED_JOB } from "../../edge/jobs/store/scheduling.ts";
import { DUE_CALLBACKS_PER_RUN } from "../../edge/jobs/store/envelope.ts";
import { LINES_PER_TURN } from "../../edge/jobs/queue.ts";
import { QUEUE_ALLOWANCE_MS } from "../../edge/jobs/verification/check-lines.ts";
import { IDLE_ACCOUNT_CHECK_MS } from "../../edge/jobs/verification/turns.ts";
import { PROBE_SETTINGS } from "../../probe/config.ts";
import { JOB_LIMITS } from "../../shared/jobs.ts";
import { CHECK_AGE_DAYS, CONFIDENCE_TABLE, DELIVERIES_WINDOW_DAYS, INDEPENDENT_ACCOUNTS, LABEL_FLOORS, SEEN_AGE_DAYS } from "../../shared/people/confidence.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const read = (path: string) => readFileSync(join(root, path), "utf8");
const en = (n: number) => n.toLocaleString("en");

/** The rows of a markdown table whose first cell is a `CODE` name: name -> the row's cells. */
function settingRows(markdown: string): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of markdown.split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    if (cells.length < 4 || !cells[1]!.startsWith("`")) continue;
    for (const name of cells[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) rows.set(name[1]!, cells.slice(2, -1));
  }
  return rows;
}

/** The default a setting's schema applies when it is not set, or undefined when it has none. */
function defaultOf(schema: z.ZodType): unknown {
  const parsed = schema.safeParse(undefined);
  return parsed.success ? parsed.data : undefined;
}

describe.each([
  ["the probe", "docs/probe.md", PROBE_SETTINGS.shape, 0],
  ["the Worker", "docs/operations.md", EdgeConfigSchema.shape, 1],
] as const)("every setting of %s is in %s, with its default", (_who, doc, shape, defaultColumn) => {
  const rows = settingRows(read(doc));
  it.each(Object.keys(shape))("%s", (name) => {
    const row = rows.get(name);
    expect(row, `${name} has no row in ${doc}`).toBeDefined();
    const value = defaultOf((shape as Record<string, z.ZodType>)[name]!);
    if (value === undefined || typeof value === "object") return;
    expect(row![defaultColumn], `${name}'s default in ${doc}`).toContain(`\`${String(value)}\``);
  });
});

describe("docs/jobs.md states the limits and the engine's numbers the code uses", () => {
  const jobs = read("docs/jobs.md");
  it.each([
    [`${JOB_LIMITS.maxBodyBytes / 1024 / 1024} MB`, "the body limit"],
    [en(JOB_LIMITS.maxAddresses), "addresses per job"],
    [`${JOB_LIMITS.maxLineBytes} bytes`, "the address length"],
    [`turn of ${LINES_PER_TURN.verification} lines`, "lines per queue message"],
    [`after ${QUEUE_ALLOWANCE_MS / 1000} s comes back unasked`, "the queue allowance"],
    [`every ${IDLE_ACCOUNT_CHECK_MS / 1000} s (\`IDLE_ACCOUNT_CHECK_MS\`)`, "how often a delivery looks for idle accounts"],
    [`(at most ${TURNS_PER_STALLED_JOB})`, "turns per stalled job and cron run"],
    [`lines ${en(LINES_PER_TRANSACTION)} per`, "lines per transaction at creation"],
    [`${CLAIM_LEASE_MS / 1000} s lease`, "the claim lease"],
    [`${LINE_POLICY.releaseDelaySeconds} s later`, "the release delay"],
    [`more than ${LINE_POLICY.maxClaims} times`, "claims before giving up"],
    [`(after\n  ${LINE_POLICY.maxProbeFailures})`, "probe failures before giving up"],
    [`the ${STALLED_JOBS_PER_RUN} longest-stalled jobs per run`, "stalled jobs per cron run"],
    [`${en(DUE_CALLBACKS_PER_RUN)} per run`, "callbacks per cron run"],
  ])("%s (%s)", (text) => {
    expect(jobs).toContain(text);
  });
});

describe("docs/api.md's confidence table is the code's (shared/people/confidence.ts)", () => {
  const api = read("docs/api.md");
  const section = api.slice(api.indexOf("### Confidence"), api.indexOf("\n### ", api.indexOf("### Confidence") + 1));
  /** The table's rows as cells, the rows that continue an input under its name. */
  const rows = section.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| Input") && !l.startsWith("|---")).map((l) => l.split("|").slice(1, -1).map((c) => c.trim()));
  let input = "";
  const byInput = new Map<string, string[][]>();
  for (const cells of rows) {
    if (cells[0] !== "") input = cells[0]!;
    byInput.set(input, [...(byInput.get(input) ?? []), cells]);
  }
  const signed = (points: readonly number[]) => points.map((p) => (p > 0 ? `+${p}` : String(p))).join(" / ");
  const ranges = (bounds: readonly number[]) => [`up to ${bounds[0]} days`, ...bounds.slice(1).map((b, i) => `${bounds[i]! + 1}-${b}`), `over ${bounds.at(-1)}`].join(" / ");
  const t = CONFIDENCE_TABLE;

  it("our check's base points, in the order valid, catch-all, nothing said, never, no mailbox", () => {
    expect(byInput.get("Our last check")!.map((r) => r[3])).toEqual([t.base.valid, t.base.catch_all, t.base.unknown, t.base.never, t.base.invalid].map(String));
  });

  it("the buckets and their points", () => {
    expect(byInput.get("Age of that check")![0]!.slice(2)).toEqual([ranges(CHECK_AGE_DAYS), signed(t.checkAge.valid)]);
    // One row each in the docs: the three checks they apply to have the same points.
    for (const row of [t.sources, t.seen]) {
      expect(row.catch_all).toEqual(row.never);
      expect(row.unknown).toEqual(row.never);
    }
    expect(byInput.get("Independent sources")![0]!.slice(2)).toEqual(["1 / 2 / 3 or more", signed(t.sources.never)]);
    expect(byInput.get("Last seen by any source")![0]!.slice(2)).toEqual([ranges(SEEN_AGE_DAYS), signed(t.seen.never)]);
  });

  it("feedback's cap and floor, the accounts that must agree, the window and the labels", () => {
    const feedback = rows.filter((r) => r[0]!.includes("independent accounts"));
    expect(feedback.map((r) => r[0]!.includes(`from ${INDEPENDENT_ACCOUNTS} or more independent accounts`))).toEqual([true, true]);
    expect(feedback.map((r) => r[3])).toEqual([`at most ${t.bouncedCap}`, `at least ${t.deliveredFloor.never}`]);
    expect(feedback[1]![0]).toContain(`in the last ${DELIVERIES_WINDOW_DAYS} days`);
    expect(section).toContain(`\`high\` (${LABEL_FLOORS.high}-100), \`medium\` (${LABEL_FLOORS.medium}-${LABEL_FLOORS.high - 1}), \`low\` (0-${LABEL_FLOORS.medium - 1})`);
  });
});

describe("relative links in the README and docs/ lead somewhere", () => {
  const slug = (heading: string) =>
    heading
      .trim()
      .toLowerCase()
      .replace(/[^\w\- ]/g, "")
      .replace(/ /g, "-");
  const headings = (path: string) => {
    const text = read(path).replace(/```[\s\S]*?```/g, "");
    return new Set([...text.matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1]!)));
  };
  const pages = ["README.md", "docs/api.md", "docs/jobs.md", "docs/probe.md", "docs/operations.md", "docs/console.md", "docs/fleet.md", "docs/architecture.md"];
  it.each(pages)("%s", (page) => {
    for (const [, target] of read(page).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [path, anchor] = target!.split("#");
      const file = path ? normalize(join(dirname(page), path)) : page;
      expect(existsSync(join(root, file)), `${page} links to ${target}`).toBe(true);
      if (anchor && file.endsWith(".md")) expect(headings(file).has(anchor), `${page} links to ${target}`).toBe(true);
    }
  });
});

describe("the map is true to the code (docs/architecture.md)", () => {
  const PRODUCT_ROOTS = ["edge", "probe", "shared", "scripts", "client"];
  /** Folders with no row of their own: what another row names as its part. */
  const COVERED_BY_PARENT = new Set(["edge/db/migrations/meta"]);
  const folders = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true })
      .filter((e) => e.isDirectory() && e.name !== "node_modules" && e.name !== "dist")
      .flatMap((e) => [`${dir}/${e.name}`, ...folders(`${dir}/${e.name}`)]);

  it("has a row for every product folder", () => {
    const rows = new Set([...read("docs/architecture.md").matchAll(/^\| `([^`]+)\/` \|/gm)].map((m) => m[1]!));
    const missing = PRODUCT_ROOTS.flatMap((r) => [r, ...folders(r)]).filter((f) => !COVERED_BY_PARENT.has(f) && !rows.has(f));
    expect(missing).toEqual([]);
  });

  it.each(["README.md", "docs/api.md", "docs/jobs.md", "docs/probe.md", "docs/operations.md", "docs/console.md", "docs/fleet.md", "docs/architecture.md", "docs/benchmarks.md"])(
    "every product path %s names exists",
    (page) => {
      const named = [...read(page).matchAll(/`((?:edge|probe|shared|scripts|client|bench|test|docs|public)\/[^`\s]*)`/g)].map((m) => m[1]!);
      // Globs, placeholders, elisions and what an install makes are not paths of the tree.
      const paths = named.filter((p) => !/[*{}<>…]|\.\.\.|node_modules/.test(p)).map((p) => p.replace(/:\d+(-\d+)?$/, ""));
      expect(paths.filter((p) => !existsSync(join(root, p)))).toEqual([]);
    },
  );
});
