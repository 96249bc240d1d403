#!/usr/bin/env bash
# Builds the plimsolld container image (deploy/plimsolld.Dockerfile) FROM the
# local Debian base that images/build.sh makes, with a plimsolld built here:
#
#   bash deploy/build-image.sh                 # release build, tags plimsoll/plimsolld:<version> and :latest
#   PROFILE=dev bash deploy/build-image.sh     # the test build (CI reuses it)
#   PLIMSOLLD_BIN=path/to/plimsolld bash deploy/build-image.sh   # a binary built elsewhere
#
# Needs dockerd and the base image (run images/build.sh first). Builds with no
# network: the image is the base plus one file.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROFILE=${PROFILE:-release}
TAG=${PLIMSOLLD_IMAGE:-plimsoll/plimsolld}
case $PROFILE in dev) out=debug ;; *) out=$PROFILE ;; esac
BIN=${PLIMSOLLD_BIN:-}
if [ -z "$BIN" ]; then
  (cd "$ROOT" && cargo build -q -p plimsolld --bin plimsolld --profile "$PROFILE")
  BIN=${CARGO_TARGET_DIR:-$ROOT/target}/$out/plimsolld
fi
# The base the sandbox images were built from (their io.plimsoll.base label).
BASE=$(docker image inspect --format '{{index .Config.Labels "io.plimsoll.base"}}' "${PLIMSOLL_SNIPPET_IMAGE:-plimsoll/snippet:latest}" 2>/dev/null || true)
BASE=${BASE:+plimsoll/base:$BASE}
[ -n "$BASE" ] && docker image inspect "$BASE" >/dev/null 2>&1 || { echo "build-image: no plimsoll/base image; run images/build.sh first" >&2; exit 1; }
VERSION=$("$BIN" --version | awk '{print $2}')
REVISION=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$BIN" "$ctx/plimsolld"
strip --strip-debug "$ctx/plimsolld" 2>/dev/null || true
docker build -q --network none --build-arg "BASE=$BASE" --build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" \
  -f "$ROOT/deploy/plimsolld.Dockerfile" -t "$TAG:$VERSION" -t "$TAG:latest" "$ctx" >"$ctx/build.log" 2>&1 \
  || { cat "$ctx/build.log" >&2; exit 1; }
echo "built $TAG:$VERSION ($PROFILE, FROM $BASE): $(docker image inspect --format '{{.Id}} {{.Size}} bytes' "$TAG:$VERSION")"
