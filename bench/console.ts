/**
 * The console in Debian's Chromium (docs/console.md): time to first byte of each page as the Worker
 * renders it under `wrangler dev` (signed in, each page's API reads included), the bytes of script and
 * CSS a browser fetches (gzipped), and a 10 MiB CSV of 100,000 rows dropped on the Lists page: how
 * long until the preview and counts are ready (parsed in a Web Worker), how long the upload takes to the
 * job's page, and how responsive the page stays while the file is read and counted (the longest gap
 * between 10 ms timer ticks on its main thread, and long tasks over 50 ms as the browser reports them).
 *
 *   npx tsx bench/console.ts [--requests 10]   (at most 20: each page's API reads count against the member's lookup limit)
 */
import { gzipSync } from "node:zlib";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { launchBrowser, pageWithAuthenticator } from "../test/browser/browser.ts";
import { MAIL_DOMAINS, startConsoleStack } from "../test/browser/stack.ts";
import { median } from "./stats.ts";

export type ConsoleBench = {
  ttfb: { path: string; medianMs: number; maxMs: number }[];
  assets: { name: string; bytes: number; gzipped: number }[];
  upload: { fileMiB: number; rows: number; readyMs: number; uploadMs: number; longestGapMs: number; longTasks: number; longestTaskMs: number };
  requests: number;
};

const RATE_WINDOW_MS = 10_500;
const PAGES = ["/console", "/console/lists", "/console/keys", "/console/members", "/console/usage", "/console/audit", "/console/erasures", "/console/people", "/console/check", "/console/sign-in"];
const ASSETS = ["console.css", "console.js", "lists.js", "list-worker.js", "passkeys.js"];

/** A CSV of 100,000 rows of about 100 bytes (just under 10 MiB, the job limit): an address in the second of five columns. */
function tenMiBList(): Buffer {
  const rows = ["name,email,company,city,notes"];
  for (let i = 0; rows.length <= 100_000; i++) {
    rows.push(`Person number ${i},user${i}@${MAIL_DOMAINS[i % 2]},Company ${i % 997} Limited,City ${i % 311},"met at fair ${i % 53}, follow up"`);
  }
  return Buffer.from(rows.join("\n") + "\n");
}

export async function runConsoleBench(opts: { requests: number; log: (m: string) => void }): Promise<ConsoleBench> {
  const stack = await startConsoleStack();
  const browser = await launchBrowser();
  try {
    const context = await browser.newContext();
    const page = await pageWithAuthenticator(context);
    await page.goto(stack.ownerLink);
    await page.getByLabel("Your name").fill("Bench Owner");
    await page.getByRole("button", { name: "Make a passkey and join" }).click();
    await page.waitForURL(`${stack.base}/console`);
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");

    opts.log(`console: time to first byte, ${opts.requests} requests per page`);
    const ttfb: ConsoleBench["ttfb"] = [];
    for (const path of PAGES) {
      const times: number[] = [];
      for (let i = 0; i < opts.requests; i++) {
        const started = performance.now();
        const res = await fetch(`${stack.base}${path}`, { headers: { cookie }, redirect: "manual" });
        times.push(performance.now() - started);
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${path} answered ${res.status}: the figures would not be the page's`);
      }
      ttfb.push({ path, medianMs: median(times), maxMs: Math.max(...times) });
      // Each page reads the API several times, counted against the member's lookup limit (100 per 10 s): one window per page.
      await new Promise((resolve) => setTimeout(resolve, RATE_WINDOW_MS));
    }
    const assets = await Promise.all(
      ASSETS.map(async (name) => {
        const body = Buffer.from(await (await fetch(`${stack.base}/console/assets/${name}`)).arrayBuffer());
        return { name, bytes: body.byteLength, gzipped: gzipSync(body, { level: 9 }).byteLength };
      }),
    );

    opts.log("console: a 10 MiB list dropped on the Lists page");
    const file = tenMiBList();
    const dir = await mkdtemp(join(tmpdir(), "console-bench-"));
    const fileOnDisk = join(dir, "big.csv");
    await writeFile(fileOnDisk, file);
    await page.goto(`${stack.base}/console/lists`);
    await page.evaluate(() => {
      const w = globalThis as unknown as { gaps: number[]; tasks: number[] };
      w.gaps = [];
      w.tasks = [];
      let last = performance.now();
      setInterval(() => {
        const now = performance.now();
        w.gaps.push(now - last);
        last = now;
      }, 10);
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) w.tasks.push(entry.duration);
      }).observe({ entryTypes: ["longtask"] } as never);
    });
    const started = performance.now();
    // A path, not a buffer: Playwright hands a buffer to the page through script on its main thread, a path the browser reads itself.
    await page.getByLabel(/CSV file/).setInputFiles(fileOnDisk);
    await page.getByRole("status").filter({ hasText: "Ready: 100,000 lines" }).waitFor({ timeout: 120_000 });
    const readyMs = performance.now() - started;
    // Read before the upload: the job's page that follows is a new document.
    const responsiveness = await page.evaluate(() => {
      const w = globalThis as unknown as { gaps: number[]; tasks: number[] };
      return { gaps: w.gaps, tasks: w.tasks };
    });
    const uploadStarted = performance.now();
    await page.getByRole("button", { name: /Start verifying 100,000 lines/ }).click();
    await page.waitForURL(/\/console\/lists\/job_/, { timeout: 120_000 });
    const uploadMs = performance.now() - uploadStarted;
    const jobId = /job_[A-Za-z0-9_-]+/.exec(page.url())![0];
    await fetch(`${stack.base}/v1/email_verification_jobs/${jobId}?purge=true`, { method: "DELETE", headers: { authorization: `Bearer ${stack.demoKey}` } });
    await rm(dir, { recursive: true, force: true });
    return {
      ttfb,
      assets,
      upload: {
        fileMiB: file.byteLength / 1024 / 1024,
        rows: 100_000,
        readyMs,
        uploadMs,
        longestGapMs: Math.max(0, ...responsiveness.gaps),
        longTasks: responsiveness.tasks.length,
        longestTaskMs: Math.max(0, ...responsiveness.tasks),
      },
      requests: opts.requests,
    };
  } finally {
    await browser.close();
    await stack.stop();
  }
}

export function consoleMarkdown(r: ConsoleBench): string {
  const total = r.assets.reduce((s, a) => s + a.gzipped, 0);
  return [
    `Time to first byte, signed in (${r.requests} requests per page, one after another):`,
    "",
    "| Page | Median | Max |",
    "|---|---:|---:|",
    ...r.ttfb.map((t) => `| ${t.path} | ${t.medianMs.toFixed(1)} ms | ${t.maxMs.toFixed(1)} ms |`),
    "",
    "| Asset | Bytes | Gzipped |",
    "|---|---:|---:|",
    ...r.assets.map((a) => `| ${a.name} | ${a.bytes.toLocaleString("en")} | ${a.gzipped.toLocaleString("en")} |`),
    `| **all together** | ${r.assets.reduce((s, a) => s + a.bytes, 0).toLocaleString("en")} | **${total.toLocaleString("en")}** (${(total / 1024).toFixed(1)} KB; budget 50 KB) |`,
    "",
    `A ${r.upload.fileMiB.toFixed(1)} MiB CSV of ${r.upload.rows.toLocaleString("en")} rows dropped on the Lists page: preview, column and counts ready in ${(r.upload.readyMs / 1000).toFixed(2)} s; ` +
      `upload to the job's page in ${(r.upload.uploadMs / 1000).toFixed(2)} s. Main thread while the file was read and counted: longest gap between 10 ms ticks ${r.upload.longestGapMs.toFixed(0)} ms, ` +
      `${r.upload.longTasks} long tasks (> 50 ms)${r.upload.longTasks ? `, the longest ${r.upload.longestTaskMs.toFixed(0)} ms` : ""}.`,
  ].join("\n");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { requests: { type: "string", default: "10" } } });
  const result = await runConsoleBench({ requests: Number(values.requests), log: (m) => process.stderr.write(`${m}\n`) });
  process.stdout.write(`${consoleMarkdown(result)}\n`);
}
