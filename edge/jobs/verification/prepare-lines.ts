/** A job's lines as stored, from its addresses: the same for a customer's upload and the cron's re-verification batches. */
import { addressKey } from "../../../shared/email/syntax.ts";
import { prepareAddress } from "../../verification/verify.ts";
import type { NewLine } from "../store/job-creation.ts";

/** Addresses checked between two yields to the event loop while a job's lines are prepared. */
const PREPARE_SLICE = 2_000;

/**
 * The lines as stored: each checked once per distinct address; a line that fails the syntax check
 * is answered now. 100,000 syntax checks take most of a second of CPU: the work yields to the event
 * loop every PREPARE_SLICE addresses, so other requests in the same isolate (their database answers
 * arriving) are not held up behind it past their own timeouts.
 */
export async function prepareLines(addresses: string[]): Promise<NewLine[]> {
  const first = new Map<string, number>();
  const lines: NewLine[] = [];
  for (let position = 0; position < addresses.length; position++) {
    if (position > 0 && position % PREPARE_SLICE === 0) await new Promise((resolve) => setTimeout(resolve, 0));
    const email = addresses[position]!;
    const prepared = prepareAddress(email);
    if (!prepared.ok) {
      lines.push({ email, domain: "", duplicateOf: null, done: prepared.result });
      continue;
    }
    const key = addressKey(prepared.parsed);
    const earlier = first.get(key);
    if (earlier === undefined) first.set(key, position);
    lines.push({ email, domain: prepared.parsed.domain, duplicateOf: earlier ?? null, done: null });
  }
  return lines;
}

