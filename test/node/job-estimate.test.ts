/**
 * A job's estimated completion (edge/jobs/store/job-rows.ts estimatedCompletion, the job's
 * queue.estimated_completion_at): the lines not parked at the rate the job has answered lines so far,
 * the parked ones not before the last of them is due again. Table-driven, no database.
 */
import { describe, expect, it } from "vitest";
import { estimatedCompletion, type JobRow } from "../../edge/jobs/store/job-rows.ts";

const NOW = 1_000_000_000;
const job = (total: number, processed: number, startedAt: number | null, waitingUntil: number | null = null) =>
  ({ total, processed, started_at: startedAt, waiting_until: waitingUntil }) as unknown as JobRow;

describe("estimatedCompletion", () => {
  it.each([
    ["nothing answered yet: nothing to go by", job(100, 0, NOW - 10_000), 0, null],
    ["not started: nothing to go by", job(100, 10, null), 0, null],
    ["half done in 10 s: another 10 s", job(100, 50, NOW - 10_000), 0, NOW + 10_000],
    ["only parked lines left: when the last is due", job(100, 90, NOW - 10_000, NOW + 3_600_000), 10, NOW + 3_600_000],
    ["parked lines due after the rest: when they are due", job(100, 50, NOW - 10_000, NOW + 60_000), 10, NOW + 60_000],
    ["parked lines due before the rest: the rest's pace", job(100, 50, NOW - 10_000, NOW + 1_000), 10, NOW + 8_000],
    ["a parked line already due: now", job(10, 9, NOW - 10_000, NOW - 5), 1, NOW],
  ] as const)("%s", (_, row, parked, expected) => {
    expect(estimatedCompletion(row, parked, NOW)).toBe(expected);
  });
});
