/** GET /v1/email_verification_jobs (docs/jobs.md "Listing jobs"): the account's jobs, newest first, paged; nobody else's. */
import { afterEach, describe, expect, it } from "vitest";
import { createApiKey } from "../../scripts/admin/accounts.ts";
import { JobList, JOB_LIST_MESSAGES } from "../../edge/routes/job-list.ts";
import { call, cancelUnfinishedJobs, db, newAccount } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

const PATH = "/v1/email_verification_jobs";

async function createJob(token: string, addresses: string[]): Promise<string> {
  const res = await call(PATH, { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ email_addresses: addresses }) });
  expect(res.status, await res.clone().text()).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

async function list(token: string, query = "") {
  const res = await call(`${PATH}${query}`, { token });
  expect(res.status, await res.clone().text()).toBe(200);
  return JobList.strict().parse(await res.json());
}

describe("GET /v1/email_verification_jobs", () => {
  it("lists the account's own jobs newest first, as each job's read answers them, and pages with next_before", async () => {
    const { token } = await newAccount();
    const other = await newAccount();
    const ids = [];
    // All-invalid lists complete at creation: the listing shows them as they are, counts and all.
    for (let i = 0; i < 3; i++) ids.push(await createJob(token, ["not an address", `also not ${i}`]));
    await createJob(other.token, ["nope"]);
    const all = await list(token);
    expect(all.jobs.map((j) => j.id)).toEqual([...ids].reverse());
    expect(all.next_before).toBeNull();
    const one = await (await call(`${PATH}/${ids[2]}`, { token })).json();
    expect(all.jobs[0]).toEqual(one);

    const first = await list(token, "?limit=2");
    expect(first.jobs.map((j) => j.id)).toEqual([ids[2], ids[1]]);
    expect(first.next_before).toBe(ids[1]);
    const second = await list(token, `?limit=2&before=${first.next_before}`);
    expect(second.jobs.map((j) => j.id)).toEqual([ids[0]]);
    expect(second.next_before).toBeNull();
    // Another account's job id as the cursor finds nothing of it.
    expect((await list(other.token, `?before=${ids[1]}`)).jobs).toEqual([]);
  });

  it("refuses a bad limit or cursor with 400 naming it, and a key without jobs:read with 403", async () => {
    const { token, accountId } = await newAccount();
    for (const limit of ["0", "101", "x", "1.5"]) {
      const res = await call(`${PATH}?limit=${limit}`, { token });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: JOB_LIST_MESSAGES.badLimit });
    }
    const bad = await call(`${PATH}?before=${encodeURIComponent("x' or 1=1")}`, { token });
    expect(await bad.json()).toEqual({ error: JOB_LIST_MESSAGES.badBefore });
    const writer = await createApiKey(db, accountId, { scopes: ["jobs:write"] });
    const refused = await call(PATH, { token: writer.token });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ reason: "missing_scope", scope: "jobs:read" });
    expect((await call(PATH)).status).toBe(401);
  });
});
