#!/usr/bin/env bash
# Builds the Node binding and runs every check on it: the generated index.d.ts
# and loader must match what is committed, a TypeScript consumer must compile
# against them, and `node --test` (real wasm runs embedded and against a real
# plimsolld, records and chains, every error code, AbortSignal).
#
#   bash bindings-node/test.sh
#
# Needs Node >= 20.17 with npm, the Rust toolchain and the wasm guest's
# toolchain (scripts/install-wasm-toolchain.sh). npm is used for @napi-rs/cli,
# typescript and @types/node (pinned by package-lock.json).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd .. && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
step() { printf '\n== bindings-node: %s\n' "$*"; }

# napi builds for an explicit --target, so its build shares nothing with the
# workspace's; PLIMSOLL_NODE_TARGET_DIR gives it a directory of its own (its
# lock then never waits on another cargo). PLIMSOLL_NODE_PREBUILT=1: scripts/test.sh
# already ran both steps below, early, while other suites waited on docker.
if [ "${PLIMSOLL_NODE_PREBUILT:-0}" = 1 ]; then
  step "npm ci and the addon: built earlier by scripts/test.sh"
else
  step "npm ci"
  npm ci --no-audit --no-fund

  step "build the addon (napi build, dev profile)"
  CARGO_TARGET_DIR=${PLIMSOLL_NODE_TARGET_DIR:-$CARGO_TARGET_DIR} npm run build
fi

step "generated index.d.ts and index.js are committed"
git diff --exit-code -- index.d.ts index.js

step "TypeScript consumer against index.d.ts"
npm run typecheck

step "plimsolld for the remote tests"
export PLIMSOLLD=${PLIMSOLLD:-$CARGO_TARGET_DIR/debug/plimsolld}
(cd "$ROOT" && cargo build -q -p plimsolld)

step "node --test"
node --test test/
