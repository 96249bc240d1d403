#!/usr/bin/env bash
# The whole test suite:
#
#   bash scripts/test.sh
#
# 1. prepares the host, and says so before it starts (idempotent; skipped with
#    PLIMSOLL_SKIP_SETUP=1, which .ci/run sets after doing it itself): docker.io, runsc registered with
#    dockerd, dockerd started, the wasm guest toolchain, valgrind, cbindgen and
#    cargo-fuzz, a Python virtualenv with plimsoll-client==0.23.0, and the
#    sandbox images;
# 2. formatting, then the test build: every test binary, bin and example of the
#    default members, compiled once;
# 3. every Rust test, by cargo-nextest (.config/nextest.toml: each test in a
#    process of its own, four at a time, the fault tests one at a time; the
#    docker tests run under runc and runsc against the real dockerd and fail,
#    never skip, without it). Meanwhile, at the lowest CPU priority, what only
#    needs the CPU the docker waits leave idle: clippy (the bindings included),
#    libplimsoll, the header check, the Python extension, the Node addon, every
#    artifact (scripts/dist.sh, the test build's profile, reusing its
#    plimsolld and libplimsoll), and the fuzz crate (fmt, clippy, its seeds as
#    regression tests, the AddressSanitizer build);
# 4. a bounded run of every fuzz target (FUZZ_SECONDS each, 15 by default;
#    docs/fuzzing.md has the long form);
# 5. the C ABI: the C suite under valgrind and AddressSanitizer, the Go module
#    (bindings-go) under the race detector; the Python and Node bindings' own
#    suites (wasm and docker, embedded and remote, records, chains, every error
#    class); the same session calls compared across the four; then every
#    artifact installed in a throwaway container with none of the build
#    toolchain (tests/dist/run.sh);
# 6. a smoke run of every benchmark and example (short form, no timing
#    assertion), a bounded admission load test that must answer runs as well
#    as shed them, a bounded soak (wasm and runc), the hosted stand-ins checked
#    by the vendors' clients, and the interop suite: the published Python
#    client against a real plimsolld on the disabled, wasm and docker (runc,
#    runsc) providers.
#
# Every phase's wall time is kept (scripts/phases.sh); run alone, the suite
# ends with their table. docs/development.md says where the time goes.
#
# The Rust tests include the hostile corpus (plimsolld/tests/hostile.rs, every
# case of tests/hostile on wasm, runc, runsc, sessions and pools) and the fault
# suite (plimsolld/tests/faults.rs, against private dockerd instances).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
TARGET=$CARGO_TARGET_DIR
mkdir -p "$TARGET"
# Run alone, this script owns the phase table; under .ci/run it adds its rows
# to that script's.
OWN_TABLE=0
if [ -z "${PHASES_FILE:-}" ]; then
  OWN_TABLE=1
  PHASES_FILE=$TARGET/ci-phases.tsv
  : >"$PHASES_FILE"
fi
PHASES_LOGS=${PHASES_LOGS:-$TARGET/ci-logs}
mkdir -p "$PHASES_LOGS"
# shellcheck source=scripts/phases.sh
. scripts/phases.sh
# A run that stops early leaves no background phase behind.
if [ "$OWN_TABLE" = 1 ]; then
  trap 'spawned_stop; echo; phases_table | tee "$TARGET/ci-times.txt"' EXIT
else
  trap spawned_stop EXIT
fi

setup() {
  cat >&2 <<'NOTE'
This prepares the host first: it installs the Debian packages it lacks
(docker.io, runsc, valgrind, golang-go, containerd and the wasm guest's
toolchain) and the pinned cbindgen and cargo-fuzz, rewrites
/etc/docker/daemon.json to register runsc and (re)starts dockerd, and builds
the local images and Python virtualenvs under target/. It needs root. On a
host already prepared, skip this with PLIMSOLL_SKIP_SETUP=1 bash scripts/test.sh.
NOTE
  bash .ci/setup-host.sh >/dev/null
}
if [ "${PLIMSOLL_SKIP_SETUP:-0}" != 1 ]; then
  phase "host setup (.ci/setup-host.sh)" setup
  phase "sandbox images (images/build.sh)" bash images/build.sh
fi
# Where .ci/setup-host.sh made the virtualenv (it follows PLIMSOLL_VENV too).
VENV=${PLIMSOLL_VENV:-$ROOT/target/venv}

docker_ready() {
  local runtimes rt
  runtimes=$(docker info --format '{{json .Runtimes}}') || { echo "docker is required but not reachable" >&2; return 1; }
  for rt in runc runsc; do
    grep -q "\"$rt\"" <<<"$runtimes" || { echo "docker runtime $rt is not registered: $runtimes" >&2; return 1; }
  done
  echo "runtimes: $runtimes"
}
phase "docker: daemon up, runc and runsc registered" docker_ready

fmt() {
  cargo fmt --all --check
  cargo fmt --manifest-path fuzz/Cargo.toml --check
}
phase "cargo fmt --check (the workspace and fuzz/)" fmt
phase "the test build and both bindings resolve shared dependencies alike (workspace-hack)" \
  bash scripts/check-workspace-hack.sh

# One build of the default members, dev-dependencies included: every test
# binary, bin and example. Everything after reuses it; a `-p` build would
# resolve features apart and compile the core (and wasmtime) again.
NEXTEST_META=$TARGET/nextest-meta
test_build() {
  cargo test --no-run
  # nextest runs what this built, with no cargo of its own: the builds below
  # hold cargo's lock while the tests run.
  mkdir -p "$NEXTEST_META"
  cargo nextest list --list-type binaries-only --message-format json >"$NEXTEST_META/binaries.json"
  cargo metadata --format-version 1 >"$NEXTEST_META/cargo.json"
}
phase "test build (cargo test --no-run: every test binary, bin and example)" test_build
# The plimsolld every suite starts: the one the Rust tests run.
export PLIMSOLLD=$TARGET/debug/plimsolld
[ -x "$PLIMSOLLD" ] || { echo "the test build left no $PLIMSOLLD" >&2; exit 1; }

# ---- in the background while the Rust tests wait on docker
# The throwaway image the artifacts are installed on (apt over the network,
# nearly no CPU).
spawn consumer-image "the consumer image (tests/dist/run.sh --image)" bash tests/dist/run.sh --image

# The fuzz crate is a workspace of its own, built in fuzz/target (not the
# CARGO_TARGET_DIR exported above, whose lock the builds below hold), and its
# AddressSanitizer build shares nothing with the build above.
fuzz_builds() {
  env -u CARGO_TARGET_DIR cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings
  env -u CARGO_TARGET_DIR cargo test --manifest-path fuzz/Cargo.toml
  FUZZ_BUILD_ONLY=1 FUZZ_PROFILE="${FUZZ_PROFILE:-quick}" bash scripts/fuzz.sh
}
SPAWN_NICE=19 spawn fuzz-builds "fuzz: clippy, the seeds as regression tests, the AddressSanitizer build" fuzz_builds

# Everything else that compiles, one after another (they share cargo's lock).
builds() {
  echo "== cargo clippy --workspace --all-targets -- -D warnings (the bindings included)"
  cargo clippy --workspace --all-targets -- -D warnings
  echo "== libplimsoll (.so and .a), with the test build's features, installed under target/capi-dev"
  cargo build
  PREFIX=$TARGET/capi-dev PROFILE=dev PLIMSOLL_CAPI_NO_BUILD=1 bash scripts/install-capi.sh
  echo "== C ABI: include/plimsoll.h matches the pinned cbindgen"
  bash scripts/check-header.sh
  echo "== the wasm benchmark"
  cargo test --bench wasm --no-run
  # cargo-nextest runs no doc test (none exists today): this keeps one from
  # being added unseen.
  echo "== doc tests"
  cargo test --doc
  echo "== the Python extension and the Node addon"
  bash bindings-python/test.sh build
  bash bindings-node/test.sh build
  echo "== every artifact (scripts/dist.sh, the test build's profile and binaries)"
  PLIMSOLL_CAPI_NO_BUILD=1 PLIMSOLLD_BIN=$PLIMSOLLD PROFILE=dev bash scripts/dist.sh
}
SPAWN_NICE=19 spawn builds "clippy, libplimsoll, header check, doc tests, bindings, artifacts" builds

# ---- the Rust tests
# Every test runs, so one failure does not hide another's.
PARITY_SUMMARY=$TARGET/parity-summary.txt
rm -f "$PARITY_SUMMARY"
# Three binaries run by their own harness, two tests at a time in one
# process: their tests start the wasm engine in-process, and share the guest
# it compiles (a few CPU-seconds) only inside one process. Under nextest each
# test compiled it again: 573 s of tests instead of 33.
INPROCESS=(plimsoll-core plimsoll-core::wasm plimsoll-core::grants)
inprocess() {
  local id path rc=0
  for id in "${INPROCESS[@]}"; do
    path=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["rust-binaries"][sys.argv[2]]["binary-path"])' \
      "$NEXTEST_META/binaries.json" "$id")
    echo "== $id: $path"
    (cd plimsoll-core && "$path" --test-threads=2) || rc=1
  done
  return "$rc"
}
try_phase "Rust tests in one process each (${INPROCESS[*]})" inprocess
not_inprocess=$(printf ' | binary_id(%s)' "${INPROCESS[@]}")
try_phase "Rust tests (cargo nextest run; .config/nextest.toml)" \
  cargo nextest run --no-fail-fast --binaries-metadata "$NEXTEST_META/binaries.json" \
  --cargo-metadata "$NEXTEST_META/cargo.json" -E "not (${not_inprocess# | })"
echo
echo "JavaScript parity (plimsoll-core/tests/parity.rs, tests/parity): agreement with node"
cat "$PARITY_SUMMARY" 2>/dev/null || echo "parity: no summary (the parity suite did not finish)"
[ "$PHASES_FAILED" = 0 ] || exit 1

wait_for fuzz-builds
wait_for builds
export PLIMSOLL_CAPI_NO_BUILD=1

# ---- the other suites, in three lanes beside the examples, load and soak
# Every suite writes what it sent for the shared session calls here; they are
# compared once all four have run.
export PLIMSOLL_SESSION_VECTORS_OUT=$ROOT/target/session-vectors
rm -rf "$PLIMSOLL_SESSION_VECTORS_OUT"
mkdir -p "$PLIMSOLL_SESSION_VECTORS_OUT"

# C and Go share target/capi-dev (each installs libplimsoll there), so they
# run one after the other; the fuzz targets then take both cores for a while.
native() {
  phase "C ABI: C suite under valgrind and AddressSanitizer" bash tests/c/run.sh
  phase "C ABI: the Go module (bindings-go) under the race detector" bash bindings-go/test.sh
  phase "fuzz: a bounded run of every target" \
    env FUZZ_SECONDS="${FUZZ_SECONDS:-15}" FUZZ_PROFILE="${FUZZ_PROFILE:-quick}" bash scripts/fuzz.sh
}
spawn native "C (valgrind, ASan), Go (race detector), then the fuzz targets" native

bindings() {
  phase "bindings: Python (PyO3)" bash bindings-python/test.sh check
  phase "bindings: Node (napi-rs)" bash bindings-node/test.sh check
}
spawn bindings "the Python and Node bindings' suites" bindings

standins() {
  local standin=$TARGET/debug/plimsoll-standin sbx_venv="${PLIMSOLL_SBX_VENV:-$ROOT/target/venv-sbx}"
  "$VENV/bin/python" tests/standins/e2b_sdk.py "$standin"
  "$VENV/bin/python" tests/standins/e2b_sdk.py "$standin" --runtime runsc
  "$VENV/bin/python" tests/standins/openshell_client.py "$standin"
  "$VENV/bin/python" tests/standins/openshell_client.py "$standin" --runtime runsc
  "$sbx_venv/bin/python" tests/standins/dockercloud_sbx.py "$standin"
  "$sbx_venv/bin/python" tests/standins/dockercloud_sbx.py "$standin" --runtime runsc
}
live() {
  local live_certs live_out live_pid live_addr live_url
  live_certs="$(mktemp -d)"
  exec {live_out}< <("$TARGET/debug/plimsoll-standin" openshell --certs-dir "$live_certs" --runtime runsc \
    --image registry.invalid/plimsoll/project:latest=plimsoll/project:latest & echo "pid $!"; wait)
  read -r _ live_pid <&"$live_out"
  read -r live_addr <&"$live_out"
  live_url="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["gateway"].replace("127.0.0.1","localhost"))' "$live_addr")"
  SANDBOX_OPENSHELL_GATEWAY_URL="$live_url" SANDBOX_OPENSHELL_CA_FILE="$live_certs/ca.crt" \
    SANDBOX_OPENSHELL_CERT_FILE="$live_certs/tls.crt" SANDBOX_OPENSHELL_KEY_FILE="$live_certs/tls.key" \
    SANDBOX_OPENSHELL_IMAGE=registry.invalid/plimsoll/project:latest bash scripts/live.sh openshell
  kill "$live_pid"
  wait "$live_pid" 2>/dev/null || true
  exec {live_out}<&-
  rm -rf "$live_certs"
}
interop() {
  if ! "$VENV/bin/python" -c 'import plimsoll_client, pytest, jwt, prometheus_client; from importlib.metadata import version; assert plimsoll_client.__version__ == "0.23.0" and version("prometheus-client") == "0.26.0"' 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q plimsoll-client==0.23.0 prometheus-client==0.26.0 pytest pyjwt
  fi
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/interop
}
services() {
  phase "interop: the published plimsoll-client 0.23.0 against plimsolld" interop
  phase "stand-ins checked by the vendors' published clients (E2B: e2b 2.63.0; OpenShell: openshell 0.1.5; Docker Cloud's Connect contract: docker-sbx-api 0.36.0; runc, then runsc)" standins
  phase "the live test's own path (scripts/live.sh openshell), pointed at the OpenShell stand-in" live
  phase "artifacts: each installed where no build toolchain is (tests/dist/run.sh)" bash tests/dist/run.sh
}
wait_for consumer-image
spawn services "interop, the hosted stand-ins, the live path, the artifacts installed" services

EXAMPLES=$TARGET/debug/examples
smoke() {
  # Every bench and example runs here once in a short form so none can rot; the
  # examples that start a daemon run target/debug/plimsolld, the test build's
  # (plimsolld/examples/support/daemon.rs), never a stale binary.
  run() { # run LABEL COMMAND...: runs it, prints its wall time
    local label=$1 t0=$SECONDS
    shift
    "$@"
    echo "smoke $label: $((SECONDS - t0)) s"
  }
  run "bench wasm (3 runs)" env PLIMSOLL_BENCH_RUNS=3 cargo test -q --bench wasm
  run "example bench_wasm (3 runs)" "$EXAMPLES/bench_wasm" 3
  run "example bench_docker (runc, 1 run)" env PLIMSOLL_BENCH_RUNTIMES=runc "$EXAMPLES/bench_docker" 1
  run "example bench_sessions (runc, 1 session)" env PLIMSOLL_BENCH_RUNTIMES=runc PLIMSOLL_BENCH_RUNS=1 \
    "$EXAMPLES/bench_sessions"
  run "example bench_wasm_client.py (20 runs, the published client)" \
    "$VENV/bin/python" plimsolld/examples/bench_wasm_client.py 20
}
try_phase "benchmarks and examples: smoke runs (short form, dev/test profile, no timing assertion)" smoke

load() {
  "$EXAMPLES/load" 2000 32 10
  LOAD_PROVIDER=docker "$EXAMPLES/load" 120 16 20 2
}
try_phase "admission: bounded loopback load with random disconnects (wasm, then docker)" load

soak() {
  "$EXAMPLES/soak" wasm 2000 8
  "$EXAMPLES/soak" runc 200 4
}
try_phase "soak: bounded mixed runs and sessions; the daemon flat at rest, nothing left (wasm, then runc)" soak

lanes=0
wait_for native || lanes=1
wait_for bindings || lanes=1
wait_for services || lanes=1
[ "$lanes" = 0 ] && [ "$PHASES_FAILED" = 0 ] || exit 1
phase "the same session calls from Python, Node, C and Go, embedded and remote" \
  python3 tests/vectors/compare.py "$PLIMSOLL_SESSION_VECTORS_OUT"
