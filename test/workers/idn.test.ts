/** The same IDN cases as the Node suite, run inside workerd: the A-label must not depend on the runtime. */
import { expect, it } from "vitest";
import { parseEmailAddress } from "../../shared/email/syntax.ts";
import { idnCases } from "../fixtures/idn-cases.ts";

it("runs inside workerd", () => {
  expect((globalThis as { navigator?: { userAgent: string } }).navigator?.userAgent).toBe("Cloudflare-Workers");
});

it.each(idnCases)("%s -> %s", (input, expected) => {
  const parsed = parseEmailAddress(input);
  expect(parsed.ok ? parsed.domain : null).toBe(expected);
});
