#!/usr/bin/env bash
# Builds the Node binding and runs every check on it: the generated index.d.ts
# and loader must match what is committed, a TypeScript consumer must compile
# against them, and `node --test` (real wasm runs embedded and against a real
# plimsolld, records and chains, every error code, AbortSignal).
#
#   bash bindings-node/test.sh          # build, then check
#   bash bindings-node/test.sh build    # npm ci and the addon only
#   bash bindings-node/test.sh check    # the checks, on what `build` left
#
# PLIMSOLLD names the plimsolld the remote tests start; unset, it is built
# (`cargo build -p plimsolld`). The test command passes the one its Rust
# tests ran, so nothing is compiled twice.
#
# Needs Node >= 20.17 with npm, the Rust toolchain and the wasm guest's
# toolchain (scripts/install-wasm-toolchain.sh). npm is used for @napi-rs/cli,
# typescript and @types/node (pinned by package-lock.json).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd .. && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
step() { printf '\n== bindings-node: %s\n' "$*"; }
MODE=${1:-all}
case $MODE in all | build | check) ;; *) echo "usage: bindings-node/test.sh [build|check]" >&2; exit 2 ;; esac

if [ "$MODE" != check ]; then
  step "npm ci"
  npm ci --no-audit --no-fund

  # `npm run build` runs napi with cargo-host.sh as its cargo, so the addon is
  # built from the workspace's target directory and dependency builds.
  step "build the addon (napi build, dev profile)"
  npm run build
fi
[ "$MODE" != build ] || exit 0

step "generated native.d.ts and native.js are committed"
git diff --exit-code -- native.d.ts native.js

step "TypeScript consumers (require and import) against index.d.ts and index.d.mts"
npm run typecheck

if [ -z "${PLIMSOLLD:-}" ]; then
  step "plimsolld for the remote tests"
  (cd "$ROOT" && cargo build -q -p plimsolld)
  export PLIMSOLLD=$CARGO_TARGET_DIR/debug/plimsolld
fi

step "node --test"
node --test test/
