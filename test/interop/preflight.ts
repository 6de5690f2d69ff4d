/**
 * The interop suite needs root (Postfix binds port 25 and drops to its own user) and Debian's
 * postfix, unbound, dnsdist and openssl. A missing piece is a broken environment, so this fails
 * loudly instead of skipping: a skipped interop suite looks exactly like a passing one in CI.
 */
import { access, constants } from "node:fs/promises";
import { delimiter, join } from "node:path";

const BINARIES = ["postfix", "unbound", "dnsdist", "openssl"] as const;
const REMEDY = "Run .ci/run, or as root: apt-get install -y postfix unbound dnsdist openssl";

async function executable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}

async function onPath(name: string): Promise<boolean> {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && (await executable(join(dir, name)))) return true;
  }
  return false;
}

export async function preflight(): Promise<void> {
  const problems: string[] = [];
  const uid = process.getuid?.();
  if (uid !== 0) problems.push(`not running as root (uid ${uid ?? "unknown"}): Postfix must bind 127.0.0.x:25`);
  for (const name of BINARIES) {
    if (await onPath(name)) continue;
    // Non-login shells and sudo can drop the sbin directories from PATH although the package is there.
    const elsewhere = ["/usr/sbin", "/sbin"].map((dir) => join(dir, name));
    const found = (await Promise.all(elsewhere.map(executable))).indexOf(true);
    problems.push(
      found >= 0 ? `${name} is at ${elsewhere[found]} but its directory is not on PATH` : `${name} not found on PATH (${process.env.PATH ?? ""})`,
    );
  }
  if (problems.length > 0) {
    throw new Error(`Interop suite cannot run:\n- ${problems.join("\n- ")}\n${REMEDY}`);
  }
}
