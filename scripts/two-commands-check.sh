#!/usr/bin/env bash
# The README's two commands, as a new user types them, from a clean clone of this checkout's HEAD:
#   npm ci && npm start   -> waits for GET /healthz to answer 200 from the Worker, then stops the stack;
#   npm ci && npm test    -> waits for the suite to start (Vitest's "RUN" line and a first test file passed), then stops it.
# It runs them with the machine's own Node (first on PATH without this repository's .tools/), and checks which case
# it met: an older Node (Debian's 20) must end with the pinned Node fetched into the clone's .tools/, a new-enough one
# with nothing fetched. The clone's npm install uses the machine's npm cache, as a second checkout would.
# Ports: EDGE_PORT, LIBSQL_PORT, PROBE_PORT, PROBE_METRICS_LISTEN default to ones apart from a running `npm start`.
# Usage: scripts/two-commands-check.sh [CLONE_DIR]   (default: a new temporary directory, removed afterwards)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
clone="${1:-$(mktemp -d /tmp/two-commands.XXXXXX)}"
keep="${1:+yes}"
export EDGE_PORT="${EDGE_PORT:-18787}" LIBSQL_PORT="${LIBSQL_PORT:-18080}" PROBE_PORT="${PROBE_PORT:-18788}"
export PROBE_METRICS_LISTEN="${PROBE_METRICS_LISTEN:-127.0.0.1:19788}" EDGE_INSPECTOR_PORT="${EDGE_INSPECTOR_PORT:-19229}"
export CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_SEND_METRICS=false

# A log without its colour codes (Vitest colours its output even into a file).
plain() { sed 's/\x1b\[[0-9;]*m//g' "$1"; }
say() { printf '[two-commands] %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

# The machine's PATH without any .tools/node-* a caller (.ci/run) put first: the commands must bring their own Node.
PATH="$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.tools/node-' | paste -sd: -)"
export PATH
command -v node >/dev/null || fail "no node on PATH"
machine_node="$(node --version)"
old_node=no
node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=19)?1:0)' && old_node=yes
say "machine Node ${machine_node} at $(command -v node) (older than the project needs: ${old_node})"

pids=()
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  sleep 1
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  [ -n "$keep" ] || rm -rf "$clone"
  # The logs stay beside the clone when something failed, for the reader of the FAIL line.
  [ "$status" != 0 ] || [ -n "$keep" ] || rm -f "$clone".*.log
}
trap cleanup EXIT

rm -rf "$clone" && git clone -q "$repo" "$clone"
cd "$clone"

say "npm ci"
npm ci --no-audit --no-fund >"$clone.npm-ci.log" 2>&1 || { tail -30 "$clone.npm-ci.log" >&2; fail "npm ci failed on Node ${machine_node}"; }
[ ! -d .tools ] || fail "npm ci fetched a Node: only the scripts should"

say "npm start"
setsid npm start >"$clone.start.log" 2>&1 &
pids+=($!)
start_pid=$!
healthy=no
for _ in $(seq 1 240); do
  if curl -fsS "http://127.0.0.1:${EDGE_PORT}/healthz" >/dev/null 2>&1; then healthy=yes; break; fi
  kill -0 "$start_pid" 2>/dev/null || break
  sleep 1
done
[ "$healthy" = yes ] || { tail -40 "$clone.start.log" >&2; fail "npm start: /healthz never answered on port ${EDGE_PORT}"; }
say "npm start: /healthz answered 200 ($(curl -fsS "http://127.0.0.1:${EDGE_PORT}/healthz"))"
grep -q "Wrangler requires at least Node" "$clone.start.log" && fail "wrangler ran on the old Node"
kill -TERM -- "-$start_pid" 2>/dev/null || true
for _ in $(seq 1 20); do kill -0 "$start_pid" 2>/dev/null || break; sleep 0.5; done

if [ "$old_node" = yes ]; then
  ls -d .tools/node-v*/bin/node >/dev/null 2>&1 || fail "Node ${machine_node} is too old, yet no Node was fetched into .tools/"
  grep -q "fetching Node" "$clone.start.log" || fail "npm start did not say it fetched Node"
  say "npm start fetched $(ls -d .tools/node-v* | xargs -n1 basename) first"
else
  [ ! -d .tools ] || fail "Node ${machine_node} is new enough, yet something was fetched into .tools/"
  say "Node ${machine_node} is new enough: nothing was fetched"
fi

say "npm test (until the suite has started and a first file passed)"
setsid npm test >"$clone.test.log" 2>&1 &
pids+=($!)
test_pid=$!
started=no
for _ in $(seq 1 600); do
  if plain "$clone.test.log" | grep -Eq '^ *RUN +v[0-9]' && plain "$clone.test.log" | grep -Eq '^ *✓ '; then started=yes; break; fi
  kill -0 "$test_pid" 2>/dev/null || break
  sleep 1
done
[ "$started" = yes ] || { tail -40 "$clone.test.log" >&2; fail "npm test: the suite did not start"; }
grep -q "Wrangler requires at least Node\|Unsupported engine" "$clone.test.log" && fail "the suite ran on the old Node"
say "npm test: $(plain "$clone.test.log" | grep -Em1 '^ *RUN +v[0-9]' | sed 's/^ *//'), first passed: $(plain "$clone.test.log" | grep -Em1 '^ *✓ ' | sed 's/^ *//')"
kill -TERM -- "-$test_pid" 2>/dev/null || true
# The other case, cheaply: with a new-enough Node first on PATH (the one just fetched, or the machine's), the launcher
# the npm scripts go through fetches nothing.
new_node_bin="$(dirname "$(ls -d "$clone"/.tools/node-v*/bin/node 2>/dev/null | head -1 || command -v node)")"
bare="$(mktemp -d)" && mkdir "$bare/scripts" && cp scripts/node.sh scripts/ensure-node.sh "$bare/scripts/"
ran="$(PATH="$new_node_bin:$PATH" bash "$bare/scripts/node.sh" node --version)"
[ ! -e "$bare/.tools" ] || fail "with ${ran} on PATH, scripts/node.sh still fetched a Node"
rm -rf "$bare"
say "with ${ran} first on PATH, scripts/node.sh fetched nothing"
say "passed: npm ci && npm start and npm ci && npm test work as written on Node ${machine_node}"
