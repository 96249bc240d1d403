#!/usr/bin/env bash
# Builds libplimsoll, installs it (scripts/install-capi.sh, dev profile) under
# target/capi-dev so the module finds it the way a user's build does, with
# pkg-config, starts plimsolld for the remote tests, and runs the Go module's
# tests and examples with the race detector and strict cgo pointer checks:
#
#   bash bindings-go/test.sh [GO_MODULE_DIR]
#
# GO_MODULE_DIR (default bindings-go) is the module to test; another copy is for
# checking this script itself (a copy with a build error must fail it).
# Exits non-zero when go vet or go test does (a build, link or cgo error, a
# panic or timeout outside a test, a failed test), whatever the output says.
# Installs Debian's golang-go (Go 1.19) when go is missing. Uses no network
# for Go modules (the module has no dependencies).
set -euo pipefail
GO_DIR=$(cd "${1:-$(dirname "$0")}" && pwd)
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
LIB=$CARGO_TARGET_DIR/debug

if ! command -v go >/dev/null; then
  echo "== installing golang-go"
  apt-get install -y golang-go >/dev/null || { apt-get update >/dev/null && apt-get install -y golang-go >/dev/null; }
fi
go version

# PLIMSOLL_CAPI_NO_BUILD=1: libplimsoll and PLIMSOLLD (a plimsolld) are built
# already (the test command builds each once, for every suite).
if [ "${PLIMSOLL_CAPI_NO_BUILD:-0}" != 1 ]; then
  echo "== build libplimsoll and plimsolld"
  cargo build -p plimsoll-capi -p plimsolld
fi
PREFIX=$CARGO_TARGET_DIR/capi-dev PROFILE=dev PLIMSOLL_CAPI_NO_BUILD=1 bash scripts/install-capi.sh
export PKG_CONFIG_PATH=$CARGO_TARGET_DIR/capi-dev/lib/pkgconfig
pkg-config --modversion plimsoll

mkdir -p "$CARGO_TARGET_DIR/go-tests"
# shellcheck source=tests/daemon.sh
. tests/daemon.sh
start_test_daemons "${PLIMSOLLD:-$LIB/plimsolld}" "$CARGO_TARGET_DIR/go-tests"

cd "$GO_DIR"
OUT=$CARGO_TARGET_DIR/go-tests/test.out
export CGO_ENABLED=1 GOPROXY=off GOFLAGS=-mod=mod GODEBUG=cgocheck=2 PLIMSOLL_TEST_WASM=1
export PLIMSOLL_VECTORS=$ROOT/tests/vectors/verify.json
export PLIMSOLL_SESSION_VECTORS=$ROOT/tests/vectors/sessions.json
export CGO_LDFLAGS="-Wl,-rpath,$CARGO_TARGET_DIR/capi-dev/lib"
echo "== go vet"
go vet ./...
echo "== go test -race"
# go test's own status decides; the filter only shortens what is shown (it
# finding nothing is not a failure, and it must not mask go test's status).
set +e
go test -race -count=1 -timeout=10m -v ./... >"$OUT" 2>&1
status=$?
set -e
grep -E '^(=== RUN|--- |\s+\S+_test\.go|ok|FAIL|PASS|panic)' "$OUT" || true
pass=$(grep -c -- '^--- PASS' "$OUT" || true)
fail=$(grep -c -- '^--- FAIL' "$OUT" || true)
skip=$(grep -c -- '^--- SKIP' "$OUT" || true)
if [ "$status" -ne 0 ]; then
  echo "go test exited $status" >&2
  tail -n 40 "$OUT" >&2
  [ "$fail" -ne 0 ] || fail=1 # a build, link or cgo failure, or a panic or timeout outside a test
fi
echo "$skip skipped"
echo "$pass passed, $fail failed"
[ "$status" -eq 0 ] && [ "$fail" -eq 0 ]
