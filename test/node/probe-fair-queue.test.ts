import { describe, expect, it } from "vitest";
import { FairQueue } from "../../probe/qmgr/fair-queue.ts";

type Item = { id: string; tenant: string | null };
const item = (id: string, tenant: string | null = id[0]!): Item => ({ id, tenant });
const queue = () => new FairQueue<Item>((i) => i.tenant);

/** Serves `n` items, one at a time, as a destination does; returns their ids. */
function serve(q: FairQueue<Item>, n = Infinity): string[] {
  const out: string[] = [];
  for (let next = q.peek(); next && out.length < n; next = q.peek()) {
    q.take(next);
    out.push(next.id);
  }
  return out;
}

describe("a destination's fair queue", () => {
  it("one tenant: first in, first out", () => {
    const q = queue();
    for (const id of ["a1", "a2", "a3"]) q.push(item(id));
    expect(serve(q)).toEqual(["a1", "a2", "a3"]);
    expect(q.length).toBe(0);
  });

  it("two tenants take turns, whichever came first and however long its list", () => {
    const q = queue();
    for (const id of ["a1", "a2", "a3", "a4", "a5", "b1", "b2"]) q.push(item(id));
    expect(serve(q)).toEqual(["a1", "b1", "a2", "b2", "a3", "a4", "a5"]);
  });

  it("three tenants: one each in turn; the rotation carries on across transactions", () => {
    const q = queue();
    for (const id of ["a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2", "c3"]) q.push(item(id));
    expect(serve(q, 2)).toEqual(["a1", "b1"]);
    expect(serve(q, 4)).toEqual(["c1", "a2", "b2", "c2"]);
    expect(serve(q)).toEqual(["a3", "b3", "c3"]);
  });

  it("single checks come before any bulk check, first in first out among themselves", () => {
    const q = queue();
    for (const id of ["a1", "a2", "b1"]) q.push(item(id));
    q.push(item("s1", null));
    q.push(item("s2", null));
    expect(serve(q)).toEqual(["s1", "s2", "a1", "b1", "a2"]);
  });

  it("a check put back goes first in its own lane, its tenant next; a transaction put back restores the order", () => {
    const q = queue();
    for (const id of ["a1", "a2", "b1", "b2"]) q.push(item(id));
    const [first] = serve(q, 1);
    expect(first).toBe("a1");
    q.unshift(item("a1"));
    expect(q.peek()!.id).toBe("a1");
    const taken = [q.peek()!];
    q.take(taken[0]!);
    taken.push(q.peek()!);
    q.take(taken[1]!);
    expect(taken.map((t) => t.id)).toEqual(["a1", "b1"]);
    q.putBack(taken);
    expect(serve(q)).toEqual(["a1", "b1", "a2", "b2"]);
  });

  it("removes an answered check from the middle of its lane, and a tenant whose lane empties leaves the rotation", () => {
    const q = queue();
    const items = ["a1", "a2", "a3", "b1"].map((id) => item(id));
    for (const i of items) q.push(i);
    expect(q.remove(items[1]!)).toBe(true);
    expect(q.remove(item("zz"))).toBe(false);
    expect(q.length).toBe(3);
    expect(serve(q, 2)).toEqual(["a1", "b1"]);
    q.push(item("c1"));
    expect(serve(q)).toEqual(["a3", "c1"]);
    expect([...q]).toEqual([]);
  });
});
