/** How the Worker spreads domains over several probes (PROBE_URL with commas). */
import { describe, expect, it } from "vitest";
import { probeOrder } from "../../edge/verification/probe-ranking.ts";

const fleet = ["https://p1.example.net", "https://p2.example.net", "https://p3.example.net"];

describe("probeOrder", () => {
  it("puts every probe in the list once, the chosen one first", () => {
    for (const domain of ["gmail.com", "example.org", "xn--bcher-kva.test"]) {
      const order = probeOrder(fleet, domain);
      expect([...order].sort()).toEqual([...fleet].sort());
    }
  });

  it("is stable for a domain, so its catch-all cache and limits stay on one probe", () => {
    expect(probeOrder(fleet, "gmail.com")).toEqual(probeOrder(fleet, "gmail.com"));
  });

  it("spreads domains over the fleet", () => {
    const firsts = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const first = probeOrder(fleet, `domain${i}.example`)[0]!;
      firsts.set(first, (firsts.get(first) ?? 0) + 1);
    }
    for (const url of fleet) expect(firsts.get(url)).toBeGreaterThan(800);
  });

  it("removing a probe moves only the domains it had; adding one takes only a fair share (rendezvous hashing)", () => {
    const domains = Array.from({ length: 3000 }, (_, i) => `domain${i}.example`);
    const before = new Map(domains.map((d) => [d, probeOrder(fleet, d)[0]!]));
    const removed = fleet[1]!;
    const smaller = fleet.filter((url) => url !== removed);
    for (const d of domains) {
      const now = probeOrder(smaller, d)[0]!;
      if (before.get(d) !== removed) expect(now, d).toBe(before.get(d));
      // A removed probe's domains go to what was their second choice: the failover order holds.
      else expect(now, d).toBe(probeOrder(fleet, d)[1]);
    }
    const added = [...fleet, "https://p4.example.net"];
    let moved = 0;
    for (const d of domains) {
      const now = probeOrder(added, d)[0]!;
      if (now !== before.get(d)) {
        expect(now, d).toBe("https://p4.example.net");
        moved++;
      }
    }
    // About a quarter of the domains move to the new probe, and only to it.
    expect(moved).toBeGreaterThan(600);
    expect(moved).toBeLessThan(900);
  });

  it("does not depend on the order of PROBE_URL", () => {
    expect(probeOrder([...fleet].reverse(), "gmail.com")).toEqual(probeOrder(fleet, "gmail.com"));
  });

  it("handles zero and one probe", () => {
    expect(probeOrder([], "a.test")).toEqual([]);
    expect(probeOrder(["https://only.example.net"], "a.test")).toEqual(["https://only.example.net"]);
  });
});
