/**
 * The import graph of edge/, probe/, shared/ and scripts/ (madge): no import circle at all, type-only imports included; and the boundaries between the parts: shared/ stands alone, the probe imports nothing of the
 * Worker's, the Worker nothing of the scripts' (the admin CLI's code is scripts/admin/), identity a room below the routes
 * and jobs, the verification engine nothing above it (edge/verification/ is imported by the single call and by jobs
 * alike), the job tables' store only by those who run or read jobs and nothing above it but the rules it applies, the
 * lookup's room nothing but the database's helpers, the probe's rooms (Postfix's: docs/probe.md) each keep to their own,
 * and, counting what is imported when the code runs (type-only imports left out), the code that starts jobs does not
 * load the consumer that runs them, nor the probe's basic types its metrics. `npm run imports:circular` prints madge's
 * own report.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const DIRECTORIES = ["edge", "probe", "shared", "scripts"];

/** Circles allowed: none (the last, edge/env.ts <-> auth.ts, rate-limits.ts and sessions.ts, went with edge/caller.ts). */
const ALLOWED_CIRCLES: string[][] = [];

type Graph = Record<string, string[]>;
/** madge's API (the package has no types of its own). */
type Madge = (paths: string[], config: object) => Promise<{ obj(): Graph }>;
const madge = createRequire(import.meta.url)("madge") as Madge;

/** Every import, type-only ones too. */
let graph: Graph;
/** What is loaded when the code runs: type-only imports left out. */
let runtime: Graph;

beforeAll(async () => {
  const read = async (skipTypeImports: boolean) => {
    const detective = { skipTypeImports };
    const result = await madge(DIRECTORIES.map((d) => `${root}${d}`), { baseDir: root, fileExtensions: ["ts", "tsx"], tsConfig: `${root}tsconfig.json`, detectiveOptions: { ts: detective, tsx: detective } });
    return result.obj();
  };
  [graph, runtime] = [await read(false), await read(true)];
}, 60_000);

/** Strongly connected components of more than one file (Tarjan): every import circle, each as its sorted files. */
function circles(g: Record<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of g[v] ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component.sort());
    }
  };
  for (const v of Object.keys(g)) if (!index.has(v)) visit(v);
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** Every file `from` loads when it runs, through its imports. */
function loads(from: string): Set<string> {
  const seen = new Set<string>();
  const todo = [...(runtime[from] ?? [])];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    todo.push(...(runtime[file] ?? []));
  }
  return seen;
}

const importsOf = (prefix: string) => Object.entries(graph).filter(([file]) => file.startsWith(prefix));

describe("the import graph", () => {
  it("reads the directories (a sanity check on the tool)", () => {
    expect(graph["edge/routes/access.ts"]).toContain("edge/identity/authenticate.ts");
    // A type-only import is in the one graph and not in the other.
    expect(graph["probe/http/metrics.ts"]).toContain("probe/qmgr/scheduler.ts");
    expect(runtime["probe/http/metrics.ts"]).not.toContain("probe/qmgr/scheduler.ts");
    expect(Object.keys(graph).filter((f) => f.startsWith("probe/")).length).toBeGreaterThan(20);
  });

  it("has no import circle but the allowed one", () => {
    expect(circles(graph)).toEqual(ALLOWED_CIRCLES);
  });

  it("shared/ imports nothing outside shared/", () => {
    const out = importsOf("shared/").flatMap(([file, deps]) => deps.filter((d) => !d.startsWith("shared/")).map((d) => `${file} -> ${d}`));
    expect(out).toEqual([]);
  });

  it("the probe imports nothing of the Worker's or the scripts' (its image copies probe/ and shared/ only)", () => {
    const out = importsOf("probe/").flatMap(([file, deps]) => deps.filter((d) => d.startsWith("edge/") || d.startsWith("scripts/")).map((d) => `${file} -> ${d}`));
    expect(out).toEqual([]);
  });

  it("the Worker imports nothing of the scripts' (the admin CLI's code is scripts/admin/)", () => {
    const out = importsOf("edge/").flatMap(([file, deps]) => deps.filter((d) => d.startsWith("scripts/")).map((d) => `${file} -> ${d}`));
    expect(out).toEqual([]);
  });

  it("identity (edge/identity/) is a room below the routes, jobs, console and verification: it imports none of them", () => {
    const above = ["edge/routes/", "edge/jobs/", "edge/console/", "edge/verification/"];
    const out = importsOf("edge/identity/").flatMap(([file, deps]) => deps.filter((d) => above.some((a) => d.startsWith(a))).map((d) => `${file} -> ${d}`));
    expect(out).toEqual([]);
  });

  it("identity's store (edge/identity/store/) imports only the pure rule (authority.ts) and tokens of the room above it", () => {
    const allowed = new Set(["edge/identity/authority.ts", "edge/identity/tokens.ts"]);
    const out = importsOf("edge/identity/store/").flatMap(([file, deps]) =>
      deps.filter((d) => d.startsWith("edge/identity/") && !d.startsWith("edge/identity/store/") && !allowed.has(d)).map((d) => `${file} -> ${d}`),
    );
    expect(out).toEqual([]);
  });

  it("the verification engine (edge/verification/) is imported downward: of the Worker it imports only itself, edge/lib/ and edge/log.ts", () => {
    const allowed = (d: string) => !d.startsWith("edge/") || d.startsWith("edge/verification/") || d.startsWith("edge/lib/") || d === "edge/log.ts";
    const out = importsOf("edge/verification/").flatMap(([file, deps]) => deps.filter((d) => !allowed(d)).map((d) => `${file} -> ${d}`));
    expect(importsOf("edge/verification/").length).toBeGreaterThan(5);
    expect(out).toEqual([]);
  });

  it("the job tables' store (edge/jobs/store/) is reached only by the jobs room, the job routes, /v1/account's read (edge/money/account.ts: the running jobs and lines of the day), the crons and the admin CLI's erasure and merges", () => {
    const allowed = [
      "edge/jobs/",
      "edge/routes/jobs.ts",
      "edge/routes/job-common.ts",
      "edge/routes/job-list.ts",
      "edge/routes/job-results.ts",
      "edge/routes/lookup-jobs.ts",
      "edge/routes/lookup-job-results.ts",
      "edge/money/account.ts",
      "edge/index.ts",
      "edge/personal-data-cron.ts",
      "scripts/admin/people-erase.ts",
      "scripts/admin/people-merge.ts",
    ];
    const out = Object.entries(graph)
      .filter(([file]) => !allowed.some((a) => (a.endsWith("/") ? file.startsWith(a) : file === a)))
      .flatMap(([file, deps]) => deps.filter((d) => d.startsWith("edge/jobs/store/")).map((d) => `${file} -> ${d}`));
    expect(out).toEqual([]);
  });

  it("the job tables' store imports nothing of the jobs room above it but the small rules it applies", () => {
    const rules = ["edge/jobs/verification/line-policy.ts", "edge/jobs/verification/untrusted.ts", "edge/jobs/queue.ts", "edge/jobs/kinds.ts", "edge/jobs/lookup/input.ts"];
    const out = importsOf("edge/jobs/store/").flatMap(([file, deps]) =>
      deps.filter((d) => d.startsWith("edge/jobs/") && !d.startsWith("edge/jobs/store/") && !rules.includes(d)).map((d) => `${file} -> ${d}`),
    );
    expect(importsOf("edge/jobs/store/").length).toBeGreaterThan(5);
    expect(out).toEqual([]);
  });

  it("there is one job engine: no edge/lookup-jobs/ room, and no kind imports another kind's files", () => {
    expect(Object.keys(graph).filter((file) => file.startsWith("edge/lookup-jobs/"))).toEqual([]);
    const kinds = ["edge/jobs/verification/", "edge/jobs/lookup/"];
    const out = kinds.flatMap((kind) =>
      importsOf(kind).flatMap(([file, deps]) => deps.filter((d) => kinds.some((other) => other !== kind && d.startsWith(other))).map((d) => `${file} -> ${d}`)),
    );
    expect(importsOf("edge/jobs/lookup/").length).toBeGreaterThan(2);
    expect(out).toEqual([]);
  });

  it("edge/routes/lookup-jobs.ts starts lookup jobs without loading the consumer that runs them", () => {
    expect(runtime["edge/routes/lookup-jobs.ts"]).toContain("edge/jobs/queue.ts");
    expect(loads("edge/routes/lookup-jobs.ts").has("edge/jobs/consumer.ts")).toBe(false);
    expect(loads("edge/routes/lookup-jobs.ts").has("edge/jobs/lookup/turns.ts")).toBe(false);
  });

  it("the lookup's room (edge/people/) imports, of the Worker, only itself, edge/db/, edge/lib/ and the money room (edge/money/: the batch call's charge)", () => {
    const allowed = (d: string) => !d.startsWith("edge/") || ["edge/people/", "edge/db/", "edge/lib/", "edge/money/"].some((p) => d.startsWith(p));
    expect(importsOf("edge/people/").map(([file]) => file)).toEqual(expect.arrayContaining(["edge/people/lookup.ts", "edge/people/store.ts"]));
    expect(importsOf("edge/people/").flatMap(([file, deps]) => deps.filter((d) => !allowed(d)).map((d) => `${file} -> ${d}`))).toEqual([]);
  });

  it("edge/env.ts, which every part reads, imports nothing of the jobs room", () => {
    expect(graph["edge/env.ts"]!.filter((d) => d.startsWith("edge/jobs/"))).toEqual([]);
  });

  it.each(["edge/routes/jobs.ts", "edge/personal-data-cron.ts"])("%s starts jobs without loading the consumer that runs them", (file) => {
    expect(loads(file).has("edge/jobs/queue.ts")).toBe(true);
    expect(loads(file).has("edge/jobs/consumer.ts")).toBe(false);
    expect(loads(file).has("edge/jobs/verification/turns.ts")).toBe(false);
  });

  describe("the probe's rooms", () => {
    /** A probe file's room: its sub-folder (qmgr/, policy/, http/, smtp/), or the file itself at probe/'s top. */
    const roomOf = (file: string) => {
      const rest = file.slice("probe/".length);
      return rest.includes("/") ? `${rest.slice(0, rest.indexOf("/"))}/` : rest;
    };
    /** The imports from `from` (a room) into probe rooms `to`, as "file -> file". */
    const arrows = (from: (room: string) => boolean, to: (room: string) => boolean) =>
      importsOf("probe/")
        .filter(([file]) => from(roomOf(file)))
        .flatMap(([file, deps]) => deps.filter((d) => d.startsWith("probe/") && roomOf(d) !== roomOf(file) && to(roomOf(d))).map((d) => `${file} -> ${d}`));
    const within = (...rooms: string[]) => (room: string) => rooms.includes(room);

    it("are rooms at all: the four folders hold files", () => {
      const rooms = new Set(importsOf("probe/").map(([file]) => roomOf(file)));
      for (const room of ["qmgr/", "policy/", "http/", "smtp/"]) expect(rooms).toContain(room);
    });

    it("import each other without a circle, so none is both above and below another", () => {
      const rooms: Graph = {};
      for (const [file, deps] of importsOf("probe/")) {
        const list = (rooms[roomOf(file)] ??= []);
        for (const d of deps) if (d.startsWith("probe/") && roomOf(d) !== roomOf(file) && !list.includes(roomOf(d))) list.push(roomOf(d));
      }
      expect(circles(rooms)).toEqual([]);
    });

    it("smtp/ speaks the protocol only: it imports nothing of the probe but clock.ts", () => {
      expect(arrows(within("smtp/"), (room) => room !== "clock.ts")).toEqual([]);
    });

    it("policy/ imports nothing of qmgr/ or http/: the receivers' rules do not know the queues that apply them", () => {
      expect(arrows(within("policy/"), within("qmgr/", "http/"))).toEqual([]);
    });

    it("qmgr/ imports nothing of http/", () => {
      expect(arrows(within("qmgr/"), within("http/"))).toEqual([]);
    });

    it("nothing of the probe imports http/ but main.ts: it is the process's shell", () => {
      expect(arrows((room) => room !== "main.ts", within("http/"))).toEqual([]);
    });

    it("the ground floor (check, counters, limits, clock, config, reputation) imports nothing of qmgr/, policy/ or http/", () => {
      expect(arrows(within("check.ts", "counters.ts", "limits.ts", "clock.ts", "config.ts", "reputation.ts"), within("qmgr/", "policy/", "http/"))).toEqual([]);
    });
  });

  it("the probe's basic types (check.ts) load neither its metrics nor its counters (prom-client)", () => {
    const reached = loads("probe/check.ts");
    expect(reached.has("probe/http/metrics.ts")).toBe(false);
    expect(reached.has("probe/counters.ts")).toBe(false);
  });
});
