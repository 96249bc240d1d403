#!/usr/bin/env bash
# Fails when include/plimsoll.h differs from what the pinned cbindgen
# generates from plimsoll-core/src/ffi now (run scripts/gen-header.sh to fix).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash scripts/gen-header.sh "$tmp/plimsoll.h"
if ! diff -u include/plimsoll.h "$tmp/plimsoll.h"; then
  echo "include/plimsoll.h is out of date: run bash scripts/gen-header.sh and commit it" >&2
  exit 1
fi
echo "include/plimsoll.h is up to date"
