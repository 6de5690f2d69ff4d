/**
 * edge/db/rows.ts on a real libSQL engine (a file database through @libsql/client, as the admin CLI uses it): the rows a
 * statement changed, deletes bounded per statement and in all, and stored times as the API writes them.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type Client } from "@libsql/client";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { deleteInBatches, iso, rowsAffected } from "../../edge/db/rows.ts";

const dir = mkdtempSync(join(tmpdir(), "rows-"));
const client: Client = createClient({ url: `file:${join(dir, "rows.db")}` });
afterAll(() => {
  client.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  await client.execute("drop table if exists t");
  await client.execute("create table t (id integer primary key, v integer)");
  await client.execute("insert into t (v) select value from json_each(json_array(1,2,3,4,5,6,7,8,9,10,11,12))");
});

/** One bounded DELETE, counting its statements. */
function deleter() {
  const limits: number[] = [];
  return {
    limits,
    deleteUpTo: (limit: number) => {
      limits.push(limit);
      return client.execute({ sql: "delete from t where id in (select id from t order by id limit ?)", args: [limit] });
    },
  };
}

describe("rowsAffected", () => {
  it("reads a statement's count, and a batch entry's; 0 for a result without one", async () => {
    expect(rowsAffected(await client.execute("update t set v = v + 1 where v <= 3"))).toBe(3);
    const [one, two] = await client.batch(["update t set v = 0 where id = 1", "delete from t where id > 10"], "write");
    expect([rowsAffected(one), rowsAffected(two)]).toEqual([1, 2]);
    expect(rowsAffected({})).toBe(0);
    expect(rowsAffected(null)).toBe(0);
  });
});

describe("deleteInBatches", () => {
  it("deletes in statements of at most perStatement rows and stops when fewer were deleted than allowed", async () => {
    const d = deleter();
    expect(await deleteInBatches(d.deleteUpTo, 5, 100)).toEqual({ deleted: 12, exhausted: true });
    expect(d.limits).toEqual([5, 5, 5]);
    expect((await client.execute("select count(*) as n from t")).rows[0]!.n).toBe(0);
  });

  it("deletes no more than max in all, the last statement trimmed to what is left of it", async () => {
    const d = deleter();
    expect(await deleteInBatches(d.deleteUpTo, 5, 7)).toEqual({ deleted: 7, exhausted: false });
    expect(d.limits).toEqual([5, 2]);
    expect((await client.execute("select min(id) as first, count(*) as n from t")).rows[0]).toMatchObject({ first: 8, n: 5 });
  });

  it("with nothing to delete, one statement says so", async () => {
    await client.execute("delete from t");
    const d = deleter();
    expect(await deleteInBatches(d.deleteUpTo, 5, 100)).toEqual({ deleted: 0, exhausted: true });
    expect(d.limits).toEqual([5]);
  });
});

describe("iso", () => {
  it("writes a stored time in milliseconds as RFC 3339 UTC, whatever numeric type SQL returned; null stays null", async () => {
    const { rows } = await client.execute("select 1795000000123 as at, null as never");
    expect(iso(rows[0]!.at as number)).toBe("2026-11-18T11:06:40.123Z");
    expect(iso(rows[0]!.never as number | null)).toBeNull();
    expect(iso(0)).toBe("1970-01-01T00:00:00.000Z");
  });
});
