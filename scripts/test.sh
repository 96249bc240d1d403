#!/usr/bin/env bash
# The whole test suite: formatting, lints, every Rust test, and the interop
# suite that drives a real plimsolld with the published Python client.
#
#   bash scripts/test.sh
#
# Needs: the Rust toolchain; python3 with venv (the interop virtualenv is made
# on first use at ${PLIMSOLL_VENV:-target/venv}). With PLIMSOLL_REQUIRE_DOCKER=1
# (CI sets it) a missing docker daemon, or a missing runc or runsc runtime, fails
# the run instead of being skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${PLIMSOLL_VENV:-$ROOT/target/venv}

step() { printf '\n== %s\n' "$*"; }

if [ "${PLIMSOLL_REQUIRE_DOCKER:-0}" = 1 ]; then
  step "docker: daemon up, runc and runsc registered"
  runtimes=$(docker info --format '{{json .Runtimes}}') || { echo "docker is required (PLIMSOLL_REQUIRE_DOCKER=1) but not reachable" >&2; exit 1; }
  for rt in runc runsc; do
    grep -q "\"$rt\"" <<<"$runtimes" || { echo "docker runtime $rt is not registered: $runtimes" >&2; exit 1; }
  done
  echo "runtimes: $runtimes"
fi

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test"
cargo test --workspace

step "interop: the published plimsoll-client 0.23.0 against plimsolld"
cargo build -p plimsolld
if ! "$VENV/bin/python" -c 'import plimsoll_client, pytest, jwt; assert plimsoll_client.__version__ == "0.23.0"' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q plimsoll-client==0.23.0 pytest pyjwt
fi
PLIMSOLLD="$ROOT/target/debug/plimsolld" "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/interop
