/** How the Worker spreads domains over several probes (PROBE_URL with commas). */
import { describe, expect, it } from "vitest";
import { probeOrder } from "../../edge/probe-client.ts";

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

  it("keeps the fallbacks in list order after the chosen probe", () => {
    const order = probeOrder(fleet, "gmail.com");
    const start = fleet.indexOf(order[0]!);
    expect(order).toEqual([...fleet.slice(start), ...fleet.slice(0, start)]);
  });

  it("handles zero and one probe", () => {
    expect(probeOrder([], "a.test")).toEqual([]);
    expect(probeOrder(["https://only.example.net"], "a.test")).toEqual(["https://only.example.net"]);
  });
});
