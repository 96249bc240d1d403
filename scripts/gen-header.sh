#!/usr/bin/env bash
# Generates include/plimsoll.h from plimsoll-core/src/ffi with the pinned
# cbindgen, adding version macros taken from the workspace version.
#
#   bash scripts/gen-header.sh            # writes include/plimsoll.h
#   bash scripts/gen-header.sh OUT.h      # writes OUT.h (check-header.sh uses this)
#
# Installs cbindgen $CBINDGEN_VERSION with `cargo install --locked` when the
# one on PATH is another version.
set -euo pipefail
cd "$(dirname "$0")/.."
CBINDGEN_VERSION=0.29.4
OUT=${1:-include/plimsoll.h}

if ! cbindgen --version 2>/dev/null | grep -qx "cbindgen $CBINDGEN_VERSION"; then
  echo "installing cbindgen $CBINDGEN_VERSION" >&2
  cargo install cbindgen --version "$CBINDGEN_VERSION" --locked >&2
fi

version=$(sed -n '/^\[workspace\.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
IFS=. read -r major minor patch <<<"${version%%[-+]*}"
[ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] || { echo "cannot read the workspace version" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  cat <<TOML
after_includes = """

#define PLIMSOLL_VERSION "$version"
#define PLIMSOLL_VERSION_MAJOR $major
#define PLIMSOLL_VERSION_MINOR $minor
#define PLIMSOLL_VERSION_PATCH $patch
#define PLIMSOLL_VERSION_NUMBER ((PLIMSOLL_VERSION_MAJOR << 16) | (PLIMSOLL_VERSION_MINOR << 8) | PLIMSOLL_VERSION_PATCH)"""
TOML
  cat plimsoll-capi/cbindgen.toml
} >"$tmp/cbindgen.toml"

# cbindgen reads the whole crate; its notes about items outside src/ffi (the
# `capi` cfg, constants and core types it cannot or need not express) are
# noise here and are counted, not shown.
if ! cbindgen --quiet --config "$tmp/cbindgen.toml" --output "$tmp/plimsoll.h" plimsoll-core 2>"$tmp/err"; then
  cat "$tmp/err" >&2
  exit 1
fi
mkdir -p "$(dirname "$OUT")"
mv "$tmp/plimsoll.h" "$OUT"
echo "wrote $OUT (plimsoll $version, cbindgen $CBINDGEN_VERSION)" >&2
