/**
 * A Vitest reporter that fails a run which stops making progress (README "Tests"): when, from the run's start (its
 * global setup included), no test case has finished and no file has started or ended for TEST_STALL_SECONDS (300 by default), it names the files still running,
 * says so on stderr, and ends the process with exit code 1 — minutes, not CI's 90-minute limit. A run once hung this way
 * at the end of a Worker test file whose every test had passed (Vitest's console interceptor parked by a queue
 * handler's log line from another I/O context: cloudflare/workers-sdk 15498 and 15719, avoided in
 * test/workers/vitest.config.ts). Every single test has its own, shorter timeout, so a run that is only slow never
 * trips this.
 */
import type { Reporter, TestCase, TestModule } from "vitest/node";

const seconds = Number(process.env.TEST_STALL_SECONDS ?? 300);

export default class StallGuard implements Reporter {
  private last = Date.now();
  private readonly running = new Set<string>();
  private timer: NodeJS.Timeout | null = null;

  private progress(): void {
    this.last = Date.now();
  }

  /** From the start: a global setup that never returns (a server that never listens) is a stall too. */
  onInit(): void {
    this.progress();
    this.timer ??= setInterval(() => this.check(), Math.min(10_000, seconds * 250));
    this.timer.unref();
  }

  onTestRunStart(): void {
    this.progress();
  }

  onTestModuleStart(module: TestModule): void {
    this.running.add(module.moduleId);
    this.progress();
  }

  onTestModuleEnd(module: TestModule): void {
    this.running.delete(module.moduleId);
    this.progress();
  }

  onTestCaseResult(_test: TestCase): void {
    this.progress();
  }

  onTestRunEnd(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private check(): void {
    const still = (Date.now() - this.last) / 1000;
    if (still < seconds) return;
    const files = [...this.running].map((f) => f.replace(`${process.cwd()}/`, ""));
    process.stderr.write(`\nStalled: no test finished and no file started or ended for ${Math.round(still)} s (TEST_STALL_SECONDS=${seconds}); still running: ${files.join(", ") || "(none reported)"}\n`);
    process.exit(1);
  }
}
