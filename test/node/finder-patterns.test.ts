/** shared/people/patterns.ts and the finder's pure grading (edge/finder/find.ts): learning, applying, particles, diacritics. */
import { describe, expect, it } from "vitest";
import { applyPattern, candidatesFor, fullNameTokens, learnPatterns, nameTokens, patternsOf, secondWorthProbing, type KnownPair } from "../../shared/people/patterns.ts";
import { candidateFeedback, finderMayProbe, patternConfidence, pairWeight } from "../../edge/finder/find.ts";
import { readFindQuery } from "../../edge/finder/query.ts";

const pair = (full: string, local: string, weight = 1): KnownPair => {
  const [given, ...rest] = full.split(" ");
  return { name: { given, family: rest.join(" ") }, local, weight };
};

describe("patterns", () => {
  it("folds diacritics and special letters as the lookups do", () => {
    const t = fullNameTokens("José Núñez-Ortiz")!;
    expect(applyPattern("{first}.{last}", t)).toBe("jose.nunezortiz");
    expect(applyPattern("{f}{last}", fullNameTokens("Jürgen Straße")!)).toBe("jstrasse");
    expect(patternsOf(fullNameTokens("José Núñez")!, "José.Núñez").map((m) => m.pattern)).toEqual(["{first}.{last}"]);
  });

  it("reads a family name's particles joined, kept with the separator, or dropped", () => {
    const t = nameTokens({ given: "Ludwig", family: "van der Berg" })!;
    expect(patternsOf(t, "ludwig.vanderberg")).toEqual([{ pattern: "{first}.{last}", style: "joined", givenStyle: null }]);
    expect(patternsOf(t, "ludwig.van.der.berg")).toEqual([{ pattern: "{first}.{last}", style: "separated", givenStyle: null }]);
    expect(patternsOf(t, "ludwig.berg")).toEqual([{ pattern: "{first}.{last}", style: "dropped", givenStyle: null }]);
    expect(patternsOf(t, "lberg").map((m) => m.pattern)).toEqual(["{f}{last}"]);
    expect(applyPattern("{first}.{last}", t, "dropped")).toBe("ludwig.berg");
  });

  it("reads hyphens kept in given and family names, and a particle style through an initial", () => {
    expect(patternsOf(fullNameTokens("Jean-Luc López")!, "jean-luc.lopez")).toEqual([{ pattern: "{first}.{last}", style: null, givenStyle: "hyphenated" }]);
    expect(patternsOf(nameTokens({ given: "Amanda", family: "Smith-Jones" })!, "amanda.smith-jones")).toEqual([{ pattern: "{first}.{last}", style: "hyphenated", givenStyle: null }]);
    expect(patternsOf(nameTokens({ given: "Andrew", family: "Le Roux" })!, "andrew.r")).toEqual([{ pattern: "{first}.{l}", style: "dropped", givenStyle: null }]);
    const learned = learnPatterns([pair("Jean-Luc Lopez", "jean-luc.lopez"), pair("Ana Ruiz", "ana.ruiz"), { name: { given: "Andrew", family: "Le Roux" }, local: "andrew.le-roux", weight: 1 }]);
    expect(learned.givenStyle).toBe("hyphenated");
    expect(learned.style).toBe("hyphenated");
    expect(candidatesFor(fullNameTokens("Mia-Sophie Okafor")!, learned)[0]!.local).toBe("mia-sophie.okafor");
  });

  it("learns shares and counts, with the domain's particle style, ignoring pairs that follow no pattern", () => {
    const learned = learnPatterns([
      pair("Ana Lopez", "ana.lopez"),
      pair("Bo Chen", "bo.chen"),
      pair("Cy Dunn", "cdunn"),
      pair("Anouk van Dijk", "anouk.dijk"),
      pair("Mia Roe", "sales"),
      pair("Eve Ash", "eve.ash", 0),
    ]);
    expect(learned.patterns[0]).toEqual({ pattern: "{first}.{last}", share: 0.75, count: 3 });
    expect(learned.patterns[1]).toEqual({ pattern: "{f}{last}", share: 0.25, count: 1 });
    expect(learned.known).toBe(6);
    expect(learned.matched).toBe(4);
    expect(learned.style).toBe("dropped");
    const [first] = candidatesFor(nameTokens({ given: "Jan", family: "de Vries" })!, learned);
    expect(first).toMatchObject({ local: "jan.vries", pattern: "{first}.{last}", prior: false });
  });

  it("puts the name's other spelling second where the domain's addresses do not say how such names are written", () => {
    const learned = learnPatterns([pair("Ana Ruiz", "ana.ruiz"), pair("Bo Chen", "bo.chen")]);
    const [a, b] = candidatesFor(fullNameTokens("Hans-Peter Lewis")!, learned);
    expect([a!.local, b!.local]).toEqual(["hanspeter.lewis", "hans-peter.lewis"]);
    expect(secondWorthProbing(a!, b)).toBe(true);
    const [c, d] = candidatesFor(fullNameTokens("Anthony van Dijk")!, learned);
    expect([c!.local, d!.local]).toEqual(["anthony.vandijk", "anthony.dijk"]);
    // Once the domain's addresses say, its way only.
    const told = learnPatterns([pair("Ana Ruiz", "ana.ruiz"), pair("Jean-Luc Roy", "jeanluc.roy")]);
    const [e, f] = candidatesFor(fullNameTokens("Hans-Peter Lewis")!, told);
    expect(e!.local).toBe("hanspeter.lewis");
    expect(f?.alternative).toBeUndefined();
  });

  it("falls back to the prior, first.last first, and never probes a second from the prior", () => {
    const [a, b] = candidatesFor(fullNameTokens("Ana Lopez")!, learnPatterns([]));
    expect(a).toMatchObject({ local: "ana.lopez", prior: true });
    expect(secondWorthProbing(a!, b)).toBe(false);
  });

  it("tries a second candidate only when two learned patterns have similar shares", () => {
    const even = learnPatterns([pair("A1 Bx", "a1.bx"), pair("C1 Dx", "c1.dx"), pair("E1 Fx", "efx"), pair("G1 Hx", "ghx")]);
    const [a, b] = candidatesFor(fullNameTokens("Ian Kay")!, even);
    expect(secondWorthProbing(a!, b)).toBe(true);
    const skewed = learnPatterns([pair("A1 Bx", "a1.bx"), pair("C1 Dx", "c1.dx"), pair("E1 Fx", "e1.fx"), pair("G1 Hx", "ghx"), pair("I1 Jx", "i1.jx")]);
    const [c, d] = candidatesFor(fullNameTokens("Ian Kay")!, skewed);
    expect(secondWorthProbing(c!, d)).toBe(false);
  });

  it("makes no candidates from a name in another script", () => {
    expect(fullNameTokens("Иван Петров")).toBeNull();
  });
});

describe("grading", () => {
  it("grades a pattern by its share and how many addresses show it, capped below high, raised by deliveries", () => {
    const c = { local: "x", pattern: "{first}.{last}" as const, share: 1, count: 40, prior: false };
    expect(patternConfidence(c, "none")).toBe(75);
    expect(patternConfidence({ ...c, count: 1 }, "none")).toBe(25);
    expect(patternConfidence({ ...c, share: 0.45, prior: true, count: 0 }, "none")).toBe(30);
    expect(patternConfidence({ ...c, count: 1 }, "delivered")).toBe(90);
  });

  it("counts a pair nothing when it bounced or is undeliverable, twice when delivered", () => {
    expect(pairWeight({ undeliverable: 1, reason: null, feedback: "none" })).toBe(0);
    expect(pairWeight({ undeliverable: 0, reason: "mailbox_not_found", feedback: "none" })).toBe(0);
    expect(pairWeight({ undeliverable: 0, reason: null, feedback: "bounced" })).toBe(0);
    expect(pairWeight({ undeliverable: 0, reason: null, feedback: "delivered" })).toBe(2);
  });

  it("lets one account's reports change only its own answers; others' count when three accounts agree", () => {
    const now = Date.now();
    const r = (account_id: string, outcome: string) => ({ account_id, outcome, occurred_at: now - 1000 });
    expect(candidateFeedback([r("poison", "hard_bounce")], "victim", now)).toBe("none");
    expect(candidateFeedback([r("poison", "hard_bounce")], "poison", now)).toBe("bounced");
    expect(candidateFeedback([r("a", "hard_bounce"), r("b", "hard_bounce"), r("c", "hard_bounce")], "victim", now)).toBe("bounced");
    expect(candidateFeedback([r("victim", "delivered"), r("a", "hard_bounce"), r("b", "hard_bounce"), r("c", "hard_bounce")], "victim", now)).toBe("delivered");
  });

  it("never probes where RCPT proves nothing, checking is forbidden or refusals are hidden", () => {
    expect(finderMayProbe("microsoft-eop", "microsoft")).toBe(false);
    expect(finderMayProbe("yahoo", "yahoo")).toBe(false);
    expect(finderMayProbe("outlook-consumer", "microsoft")).toBe(false);
    expect(finderMayProbe("cisco", "cisco")).toBe(false);
    expect(finderMayProbe("google", "google")).toBe(true);
    expect(finderMayProbe("forcepoint", "forcepoint")).toBe(true);
    expect(finderMayProbe("self-hosted", null)).toBe(true);
  });
});

describe("the query", () => {
  it("reads a full name, first and last, a URL for a domain, and a company", () => {
    const q = readFindQuery({ full_name: "Ludwig van Beethoven", domain: "https://www.Acme.com/team" });
    expect(q).toMatchObject({ ok: true, find: { domain: "acme.com", nameKey: "ludwig beethoven", firstName: "Ludwig", lastName: "van Beethoven" } });
    expect(readFindQuery({ first_name: "Ana", last_name: "López", company: "Acme, Inc." })).toMatchObject({ ok: true, find: { company: "acme", domain: null } });
  });
});
