#!/usr/bin/env bash
# Builds the Python binding into a virtualenv and runs every check on it:
# stubtest on the committed stubs, their docstrings against the module's,
# mypy --strict on a usage file, and pytest
# (real wasm runs embedded and against a real plimsolld, records and chains,
# every error class, interop with the published plimsoll-client 0.23.0).
#
#   bash bindings-python/test.sh          # build, then check
#   bash bindings-python/test.sh build    # the virtualenv and the extension only
#   bash bindings-python/test.sh check    # the checks, on what `build` left
#
# PLIMSOLLD names the plimsolld the remote tests start; unset, it is built
# (`cargo build -p plimsolld`). The test command passes the one its Rust
# tests ran, so nothing is compiled twice.
#
# Needs python3 with venv (3.10+), the Rust toolchain and the wasm guest's
# toolchain (scripts/install-wasm-toolchain.sh). PyPI is used for maturin,
# pytest, pytest-asyncio, mypy and plimsoll-client.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd .. && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
VENV=${PLIMSOLL_PY_VENV:-$CARGO_TARGET_DIR/py-venv}
step() { printf '\n== bindings-python: %s\n' "$*"; }
MODE=${1:-all}
case $MODE in all | build | check) ;; *) echo "usage: bindings-python/test.sh [build|check]" >&2; exit 2 ;; esac

if [ "$MODE" != check ]; then
  step "virtualenv $VENV"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "maturin==1.16.0" "pytest>=8" "pytest-asyncio>=0.23" "mypy>=1.10" "plimsoll-client==0.23.0"

  step "build the extension (maturin develop, dev profile)"
  VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" maturin develop -q
fi
[ "$MODE" != build ] || exit 0

if [ -z "${PLIMSOLLD:-}" ]; then
  step "plimsolld for the remote tests"
  (cd "$ROOT" && cargo build -q -p plimsolld)
  export PLIMSOLLD=$CARGO_TARGET_DIR/debug/plimsolld
fi

step "stubs: stubtest, docstrings (stubdoc.py --check) and mypy --strict"
"$VENV/bin/python" -m mypy.stubtest plimsoll._native
"$VENV/bin/python" stubdoc.py --check
(cd tests && "$VENV/bin/python" -m mypy --strict typing_usage.py)

step "pytest"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests
