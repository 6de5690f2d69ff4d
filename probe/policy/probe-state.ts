/**
 * What a probe must not forget when it restarts (PROBE_STATE_FILE): every receiver budget's refusals
 * of the hour and answers of its window, pauses and stops a receiver asked for (a block among them), each family's
 * warm-up, what receivers taught us by blocking or throttling us (policy/learned.ts), and the blocks in force with
 * their scope and re-tests (policy/blocks.ts). A redeploy must not reset a gateway's count to zero, nor a new IP's ramp to its end.
 *
 * One small JSON file on the probe's own disk, written whole to a temporary name and renamed (a crash
 * mid-write leaves the previous one), every few seconds while something changed and at a clean stop.
 * A file that cannot be read or does not parse is logged and ignored: the probe then starts as new
 * IPs do, at the warm-up's start, which errs on the safe side.
 */
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { z } from "zod";
import { RECEIVER_FAMILIES } from "../../shared/email/receivers.ts";
import type { ReceiverPolicies, ReceiverState } from "./receivers.ts";

/** How often the state is written while the probe runs. */
export const STATE_SAVE_MS = 5_000;
/** A state file larger than this is not read (it is ours, but a disk can hold anything). */
const MAX_STATE_BYTES = 64 * 1024 * 1024;

const Snapshot = z.object({
  refusals: z.array(z.tuple([z.number(), z.string().max(128)])),
  answers: z.array(z.tuple([z.number(), z.string().max(128), z.union([z.literal(0), z.literal(1)])])),
  pause: z.object({ until: z.number(), level: z.number().int().min(0), stop: z.boolean() }).nullable(),
});
const Warmup = z.object({
  since: z.number(),
  factor: z.number().gt(0).max(1),
  day: z.number().int(),
  frozenDay: z.number().int(),
  rate: z.number().gt(0).max(1).optional(),
  rateSince: z.number().optional(),
});
const Learned = z.object({ harvest: z.boolean(), rateFactor: z.number().gt(0).max(1), blocks: z.number().int().min(0), throttles: z.number().int().min(0), at: z.number() });
const Block = z.object({
  key: z.string().max(300),
  family: z.enum(RECEIVER_FAMILIES),
  scope: z.enum(["destination", "domain"]),
  domain: z.string().max(255).nullable(),
  reply: z.string().max(300),
  since: z.number(),
  until: z.number(),
  retests: z.number().int().min(0),
  nextRetestAt: z.number().nullable(),
  confirmed: z.boolean(),
});
const StateFile = z.object({
  version: z.literal(1),
  saved_at: z.number(),
  budgets: z.record(z.string().max(300), Snapshot),
  warmup: z.partialRecord(z.enum(RECEIVER_FAMILIES), Warmup),
  /** What receivers taught us (policy/learned.ts), by budget key; absent in files of earlier versions. */
  learned: z.record(z.string().max(300), Learned).optional(),
  /** The blocks in force, their scope and re-tests (policy/blocks.ts); absent in files of earlier versions. */
  blocks: z.array(Block).max(10_000).optional(),
});

/** The state a previous run left, or null (none, unreadable, or not ours: logged). */
export function loadProbeState(path: string): ReceiverState | null {
  let text: string;
  try {
    const raw = readFileSync(path);
    if (raw.byteLength > MAX_STATE_BYTES) throw new Error(`larger than ${MAX_STATE_BYTES} bytes`);
    text = raw.toString("utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") warn("probe state unreadable", err);
    return null;
  }
  try {
    const parsed = StateFile.parse(JSON.parse(text));
    return { budgets: parsed.budgets, warmup: parsed.warmup, ...(parsed.learned ? { learned: parsed.learned } : {}), ...(parsed.blocks ? { blocks: parsed.blocks } : {}) };
  } catch (err) {
    warn("probe state ignored", err);
    return null;
  }
}

/** Writes the budgets' state now (temporary file, then rename). */
export function saveProbeState(path: string, budgets: ReceiverPolicies, now: number): void {
  const state = budgets.snapshot(now);
  const tmp = `${path}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify({ version: 1, saved_at: now, ...state }), { mode: 0o600 });
    renameSync(tmp, path);
  } catch (err) {
    warn("probe state not saved", err);
  }
}

function warn(msg: string, err: unknown): void {
  console.warn(JSON.stringify({ level: "warn", msg, error: err instanceof Error ? err.message.slice(0, 200) : String(err).slice(0, 200) }));
}
