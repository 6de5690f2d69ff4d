/**
 * The job consumer's answer writer: batches, at most one write in flight, every answer written once
 * and in order, a failed write failing finish(). Its store is a plain async function here (the
 * database path is covered by the jobs tests in workerd and the interop job).
 *
 * One case runs in a child process under a time limit: a writer that wedges does not throw, it spins
 * in microtasks and freezes its event loop, the test runner's timers included.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { answerWriter, type AnswerWriterLimits } from "../../edge/jobs/verification/answer-writer.ts";
import type { LineAnswer } from "../../edge/jobs/store/lines.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const release = (position: number): LineAnswer => ({ position, kind: "release" });

/** A store that takes `ms` per write and records each write's positions. */
function store(ms: number, fail?: (call: number) => boolean) {
  const writes: number[][] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const write = async (answers: LineAnswer[]) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await sleep(ms);
    inFlight--;
    if (fail?.(writes.length)) throw new Error("the database went away");
    writes.push(answers.map((a) => a.position));
    return null;
  };
  return { write, writes, maxInFlight: () => maxInFlight };
}

const LIMITS: AnswerWriterLimits = { writeBatch: 3, maxWrite: 5, maxPending: 8, flushAfterMs: 50 };

describe("the answer writer", () => {
  it("writes in batches, one write at a time, every answer once and in order", async () => {
    const s = store(10);
    const writer = answerWriter(s.write, { limits: LIMITS });
    for (let i = 0; i < 23; i++) await writer.add(release(i));
    await writer.finish();
    expect(s.writes.flat()).toEqual(Array.from({ length: 23 }, (_, i) => i));
    expect(Math.max(...s.writes.map((w) => w.length))).toBeLessThanOrEqual(LIMITS.maxWrite);
    expect(s.maxInFlight()).toBe(1);
    expect([...writer.released]).toHaveLength(23);
  });

  it("a lone answer is written after flushAfterMs, before finish() is called", async () => {
    const s = store(1);
    const writer = answerWriter(s.write, { limits: LIMITS });
    await writer.add(release(0));
    await sleep(LIMITS.flushAfterMs + 100);
    expect(s.writes).toEqual([[0]]);
    await writer.finish();
    expect(s.writes).toEqual([[0]]);
  });

  it("a failed write fails finish(), and answers added after it are refused", async () => {
    const s = store(1, (call) => call === 0);
    const writer = answerWriter(s.write, { limits: LIMITS });
    for (let i = 0; i < 3; i++) await writer.add(release(i));
    await sleep(20);
    await expect(writer.add(release(3))).rejects.toThrow(/went away/);
    await expect(writer.finish()).rejects.toThrow(/went away/);
  });

  it("does not wedge when its flush timer fires after a running write took the answers it was set for", () => {
    // Two answers start a write; a third arrives meanwhile (arming the timer) and is taken by that
    // same write; the timer then fires with nothing to write. finish() must still return.
    const script = `
      const { answerWriter } = await import(${JSON.stringify(`${root}edge/jobs/verification/answer-writer.ts`)});
      const written = [];
      const write = async (answers) => { await new Promise((r) => setTimeout(r, 20)); written.push(...answers.map((a) => a.position)); return null; };
      const writer = answerWriter(write, { limits: { writeBatch: 2, maxWrite: 10, maxPending: 100, flushAfterMs: 100 } });
      for (const position of [0, 1, 2]) await writer.add({ position, kind: "release" });
      await new Promise((r) => setTimeout(r, 300));
      await writer.finish();
      console.log(JSON.stringify(written));
    `;
    const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, encoding: "utf8", timeout: 10_000 });
    expect(child.error?.message ?? child.stderr, "finish() did not return within 10 s").toBe("");
    expect(child.stdout.trim()).toBe("[0,1,2]");
  });
});
