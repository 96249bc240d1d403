#!/usr/bin/env bash
# Builds libplimsoll, starts a plimsolld for the remote tests, and runs the Go
# wrapper's tests with the race detector and strict cgo pointer checks:
#
#   bash tests/go/run.sh
#
# Installs Debian's golang-go (Go 1.19) when go is missing. Uses no network
# for Go modules (the module has no dependencies).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
LIB=$CARGO_TARGET_DIR/debug

if ! command -v go >/dev/null; then
  echo "== installing golang-go"
  apt-get install -y golang-go >/dev/null || { apt-get update >/dev/null && apt-get install -y golang-go >/dev/null; }
fi
go version

echo "== build libplimsoll and plimsolld"
cargo build -p plimsoll-capi -p plimsolld

mkdir -p "$CARGO_TARGET_DIR/go-tests"
# shellcheck source=tests/daemon.sh
. tests/daemon.sh
start_test_daemons "$LIB/plimsolld" "$CARGO_TARGET_DIR/go-tests"

cd tests/go
export CGO_ENABLED=1 GOPROXY=off GOFLAGS=-mod=mod GODEBUG=cgocheck=2 PLIMSOLL_TEST_WASM=1
export CGO_LDFLAGS="-L$LIB -Wl,-rpath,$LIB"
echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -count=1 -v ./... 2>&1 | tee "$CARGO_TARGET_DIR/go-tests/test.out" | grep -E '^(=== RUN|--- |\s+\S+_test\.go|ok|FAIL|PASS|panic)' || true
status=${PIPESTATUS[0]}
pass=$(grep -c -- '^--- PASS' "$CARGO_TARGET_DIR/go-tests/test.out" || true)
fail=$(grep -c -- '^--- FAIL' "$CARGO_TARGET_DIR/go-tests/test.out" || true)
skip=$(grep -c -- '^--- SKIP' "$CARGO_TARGET_DIR/go-tests/test.out" || true)
if [ "$status" -ne 0 ] && [ "$fail" -eq 0 ]; then
  fail=1 # a build failure or a panic outside a test
  tail -n 40 "$CARGO_TARGET_DIR/go-tests/test.out" >&2
fi
echo "$skip skipped"
echo "$pass passed, $fail failed"
[ "$status" -eq 0 ] && [ "$fail" -eq 0 ]
