/**
 * "Enrich a list" in the console without a browser (docs/console.md "Enrich a list"): the Lists page's section for a
 * role that may look people up (and none for one that may not), the form without script handing the file to
 * POST /v1/lookup_jobs as it is, the job's page, and its cancel and delete forms, each a POST that redirects with a note.
 */
import { afterEach, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { CONSOLE_ORIGIN, join } from "./console-session.ts";
import { db, insertPerson, newAccount, send, uniqueIds } from "./helpers.ts";

afterEach(async () => {
  await db.run(sql`update lookup_jobs set status = 'cancelled', completed_at = ${Date.now()} where status in ('queued', 'running', 'paused')`);
});

/** A request to a console page as a browser makes it, redirects not followed: the session cookie, and Origin unless told otherwise. */
function consoleCall(path: string, init: RequestInit & { cookie?: string; origin?: string | null } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const origin = init.origin === undefined ? CONSOLE_ORIGIN : init.origin;
  if (origin !== null) headers.set("Origin", origin);
  if (init.cookie) headers.set("Cookie", `session=${init.cookie}`);
  return send(new Request(`${CONSOLE_ORIGIN}${path}`, { method: init.method ?? "GET", headers, body: init.body ?? null, redirect: "manual" }));
}

async function follow(res: Response, cookie: string): Promise<string> {
  expect(res.status).toBe(303);
  return (await consoleCall(res.headers.get("location")!, { cookie, origin: null })).text();
}

async function waitForPage(path: string, cookie: string, text: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const page = await (await consoleCall(path, { cookie, origin: null })).text();
    if (page.includes(text)) return page;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${path} never said ${text}`);
}

describe("Enrich a list", () => {
  it("is on the Lists page for a role that may look people up, and not for a viewer", async () => {
    const { accountId } = await newAccount(42);
    const dev = await join(accountId, "developer", "Dev Enrich");
    const page = await (await consoleCall("/console/lists", { cookie: dev.cookie, origin: null })).text();
    expect(page).toContain('<h2 id="enrich">Enrich a list</h2>');
    expect(page).toContain("Your balance: 42 credits.");
    expect(page).toContain("/console/assets/enrich.js");
    const viewer = await join(accountId, "viewer", "Vi Ewer");
    const theirs = await (await consoleCall("/console/lists", { cookie: viewer.cookie, origin: null })).text();
    expect(theirs).not.toContain("Enrich a list");
  });

  it("hands a file posted without script to the lookup jobs API as it is, opens the job's page, and deletes its results there", async () => {
    const { accountId } = await newAccount(10);
    const { cookie } = await join(accountId, "developer", "Dev Lists");
    const ids = uniqueIds();
    await insertPerson({ ...ids, emails: ["ada@example.org"] });
    const body = new FormData();
    body.set("file", new File([`Name,profnet_id\nAda,${ids.profnet_id}\nNobody,${ids.profnet_id + 1}\n`], "crm.csv", { type: "text/csv" }));
    body.set("retention_days", "7");
    const res = await consoleCall("/console/lists/enrich", { cookie, method: "POST", body });
    expect(res.status).toBe(303);
    const id = /\/console\/enrichments\/(lkj_[A-Za-z0-9_-]+)$/.exec(res.headers.get("location") ?? "")?.[1];
    expect(id).toBeDefined();
    const [job] = await db.all<{ total: number; retention_seconds: number; account_id: string }>(sql`select total, retention_seconds, account_id from lookup_jobs where id = ${id!}`);
    expect(job).toEqual({ total: 2, retention_seconds: 7 * 86_400, account_id: accountId });
    const page = await waitForPage(`/console/enrichments/${id}`, cookie, "2 of 2 looked up · completed");
    expect(page).toContain("Credits charged: 1 of at most 2");
    expect(page).toContain("Found only (CSV)");
    const lists = await (await consoleCall("/console/lists", { cookie, origin: null })).text();
    expect(lists).toContain(`/console/enrichments/${id}`);
    const deleted = await consoleCall(`/console/enrichments/${id}/delete`, { cookie, method: "POST" });
    const after = await follow(deleted, cookie);
    expect(after).toContain("The results were deleted.");
    expect(after).not.toContain("Found only (CSV)");
  });

  it("says what the API refused, on the Lists page", async () => {
    const { accountId } = await newAccount(10);
    const { cookie } = await join(accountId, "developer", "Dev Refused");
    const body = new FormData();
    body.set("file", new File(["Name,Notes\nAda,met at the conference\n"], "crm.csv", { type: "text/csv" }));
    const res = await consoleCall("/console/lists/enrich", { cookie, method: "POST", body });
    expect(await follow(res, cookie)).toContain("The CSV has no identifier column");
    expect(await db.all(sql`select 1 from lookup_jobs where account_id = ${accountId}`)).toEqual([]);
  });

  it("cancels a paused list through the API and says so", async () => {
    const { accountId } = await newAccount(0);
    const { cookie } = await join(accountId, "developer", "Dev Paused");
    const ids = uniqueIds();
    await insertPerson({ ...ids });
    const body = new FormData();
    body.set("file", new File([`profnet_id\n${ids.profnet_id}\n`], "one.csv", { type: "text/csv" }));
    const res = await consoleCall("/console/lists/enrich", { cookie, method: "POST", body });
    const id = /(lkj_[A-Za-z0-9_-]+)$/.exec(res.headers.get("location") ?? "")![1]!;
    const paused = await waitForPage(`/console/enrichments/${id}`, cookie, "paused:");
    expect(paused).toContain("The account&#39;s credit balance ran out");
    const cancelled = await consoleCall(`/console/enrichments/${id}/cancel`, { cookie, method: "POST" });
    expect(await follow(cancelled, cookie)).toContain("The list was cancelled: nothing more is looked up or charged.");
    const [job] = await db.all<{ status: string }>(sql`select status from lookup_jobs where id = ${id}`);
    expect(job!.status).toBe("cancelled");
  });
});
