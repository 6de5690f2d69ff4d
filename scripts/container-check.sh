#!/usr/bin/env bash
# The probe's container image built from probe/Dockerfile and run as production runs it (.ci/run calls this; run it as
# root, on a machine with Debian's apt): podman builds it on a Debian base made here with mmdebstrap (no image registry
# is needed: Node and npm come from the npm registry inside the build), then test/container starts it on the host's
# network and sends it signed checks against a fixture mail server on loopback.
#
#   PROBE_IMAGE   the tag to build and test (default localhost/contact-verify-probe:ci)
#   PROBE_BASE    the base image; when it is not present, made with mmdebstrap (default localhost/debian:bookworm-min)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-node.sh
export PATH="$PATH:/usr/sbin:/sbin"
export PROBE_IMAGE="${PROBE_IMAGE:-localhost/contact-verify-probe:ci}"
base="${PROBE_BASE:-localhost/debian:bookworm-min}"
# runc and cgroupfs: crun's defaults fail on these machines (test/container/containers.conf says why).
export CONTAINERS_CONF="$PWD/test/container/containers.conf"
seconds() { echo "$(($(date +%s) - $1)) s"; }

if [ "$(id -u)" != 0 ]; then
  echo "container-check: run as root (podman builds and runs the image as root here)" >&2
  exit 1
fi

missing=()
for bin in podman mmdebstrap runc; do command -v "$bin" >/dev/null || missing+=("$bin"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "container-check: installing ${missing[*]} from Debian"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends podman mmdebstrap runc
fi

if ! podman image exists "$base"; then
  started=$(date +%s)
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  mmdebstrap --quiet --variant=minbase bookworm "$tmp/rootfs.tar"
  podman import --quiet "$tmp/rootfs.tar" "$base" >/dev/null
  echo "container-check: base $base made with mmdebstrap in $(seconds "$started")"
fi

# A machine whose HTTPS goes through an intercepting proxy trusts it through NODE_EXTRA_CA_CERTS or npm's cafile; the
# build's npm ci gets the same bundle as a build secret (mounted for that step only, never in the image).
secret=()
cafile="${NODE_EXTRA_CA_CERTS:-}"
if [ -z "$cafile" ]; then cafile="$(npm config get cafile)"; fi
if [ -n "$cafile" ] && [ "$cafile" != null ] && [ -f "$cafile" ]; then secret=(--secret "id=npm_ca,src=$cafile"); fi

started=$(date +%s)
# --format docker keeps the Dockerfile's HEALTHCHECK (the OCI format has none).
podman build --quiet --format docker --network=host "${secret[@]}" --build-arg "BASE=$base" -f probe/Dockerfile -t "$PROBE_IMAGE" . >/dev/null
echo "container-check: built $PROBE_IMAGE in $(seconds "$started")"

started=$(date +%s)
npx vitest run --config test/container/vitest.config.ts
echo "container-check: the image's checks took $(seconds "$started")"
