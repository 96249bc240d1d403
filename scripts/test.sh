#!/usr/bin/env bash
# The whole test suite:
#
#   bash scripts/test.sh
#
# 1. prepares the host, and says so before it starts (idempotent; skipped with
#    PLIMSOLL_SKIP_SETUP=1, which .ci/run sets after doing it itself): docker.io, runsc registered with
#    dockerd, dockerd started, the wasm guest toolchain, valgrind, a Python
#    virtualenv with plimsoll-client==0.23.0, and the sandbox images;
# 2. formatting, clippy, every Rust test (the docker tests run under runc and
#    runsc against the real dockerd and fail, never skip, without it); the fuzz
#    targets' seeds as regression tests and a bounded run of every target
#    (FUZZ_SECONDS each, 15 by default; docs/fuzzing.md has the long form);
# 3. the C ABI: header drift, the C suite under valgrind and AddressSanitizer,
#    the Go module (bindings-go) under the race detector;
# 4. the Python and Node bindings' own suites (wasm and docker, embedded and
#    remote, records, chains, every error class); then every artifact (wheel,
#    sdist, npm tarballs, C install tree, Go module, plimsolld image) built
#    once and installed in a throwaway container with none of the build
#    toolchain (tests/dist/run.sh), its wall time printed;
# 5. a smoke run of every benchmark and example (short form, no timing
#    assertion), a bounded admission load test that must answer runs as well
#    as shed them, a bounded soak (wasm and runc), and the interop suite: the published Python client against a real plimsolld on
#    the disabled, wasm and docker (runc, runsc) providers.
#
# `cargo test` includes the hostile corpus (plimsolld/tests/hostile.rs, every
# case of tests/hostile on wasm, runc, runsc and sessions) and the fault suite
# (plimsolld/tests/faults.rs, against private dockerd instances).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

# Each step names itself with the suite's elapsed time, so a slow step shows.
SUITE_START=$(date +%s)
step() { printf '\n== [%ss] %s\n' "$(( $(date +%s) - SUITE_START ))" "$*"; }

if [ "${PLIMSOLL_SKIP_SETUP:-0}" != 1 ]; then
  step "host setup"
  cat >&2 <<'NOTE'
This prepares the host first: it installs the Debian packages it lacks
(docker.io, runsc, valgrind, golang-go, containerd and the wasm guest's
toolchain), rewrites /etc/docker/daemon.json to register runsc and (re)starts
dockerd, and builds the local images and Python virtualenvs under target/.
It needs root. On a host already prepared, skip
this with PLIMSOLL_SKIP_SETUP=1 bash scripts/test.sh.
NOTE
  PLIMSOLL_VENV=$(bash .ci/setup-host.sh)
  export PLIMSOLL_VENV
  bash images/build.sh
fi
VENV=${PLIMSOLL_VENV:-$ROOT/target/venv}

step "docker: daemon up, runc and runsc registered"
runtimes=$(docker info --format '{{json .Runtimes}}') || { echo "docker is required but not reachable" >&2; exit 1; }
for rt in runc runsc; do
  grep -q "\"$rt\"" <<<"$runtimes" || { echo "docker runtime $rt is not registered: $runtimes" >&2; exit 1; }
done
echo "runtimes: $runtimes"

step "cargo fmt --check"
cargo fmt --all --check

step "the test build and both bindings resolve shared dependencies alike (workspace-hack)"
bash scripts/check-workspace-hack.sh

step "cargo clippy --workspace --all-targets -- -D warnings (the bindings included)"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test"
# The default members: the bindings are built later by maturin and napi, from
# the same target directory and the same dependency builds.
cargo test --no-fail-fast --no-run
# The fuzz targets' build shares nothing with the one above (AddressSanitizer),
# so it starts now, at the lowest CPU priority and in a target directory of its
# own, while the suites below mostly wait on docker; the fuzz step waits for it.
prebuild() { # prebuild NAME COMMAND...: runs it in the background, logged
  local name=$1
  shift
  ( nice -n 19 "$@" ) >"$ROOT/target/prebuild-$name.log" 2>&1 &
  eval "PREBUILD_${name}=$!"
}
prebuilt() { # prebuilt NAME: waits for it; fails with its log if it failed
  local pid_var="PREBUILD_$1"
  if ! wait "${!pid_var}"; then
    echo "the $1 build failed:" >&2
    cat "$ROOT/target/prebuild-$1.log" >&2
    exit 1
  fi
  echo "the $1 build, started early: $(tail -n 1 "$ROOT/target/prebuild-$1.log")"
}
# The throwaway image the artifacts are installed on (apt over the network,
# about 90 s, nearly no CPU) is built meanwhile too.
prebuild consumer bash tests/dist/run.sh --image
prebuild fuzz env FUZZ_BUILD_ONLY=1 FUZZ_PROFILE="${FUZZ_PROFILE:-quick}" bash scripts/fuzz.sh
# Every test binary runs, so one failure does not hide another's.
PARITY_SUMMARY=${CARGO_TARGET_DIR:-$ROOT/target}/parity-summary.txt
rm -f "$PARITY_SUMMARY"
status=0
cargo test --no-fail-fast || status=$?
step "JavaScript parity (plimsoll-core/tests/parity.rs, tests/parity): agreement with node"
cat "$PARITY_SUMMARY" 2>/dev/null || echo "parity: no summary (the parity suite did not finish)"
[ "$status" -eq 0 ] || exit "$status"

step "fuzz: seeds as regression tests, then a bounded run of every target"
cargo fmt --manifest-path fuzz/Cargo.toml --check
cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings
cargo test --manifest-path fuzz/Cargo.toml
prebuilt fuzz
FUZZ_SECONDS=${FUZZ_SECONDS:-15} FUZZ_PROFILE=${FUZZ_PROFILE:-quick} bash scripts/fuzz.sh

step "C ABI: include/plimsoll.h matches the pinned cbindgen"
bash scripts/check-header.sh

# Every suite writes what it sent for the shared session calls here; they are
# compared once all four have run.
export PLIMSOLL_SESSION_VECTORS_OUT=$ROOT/target/session-vectors
rm -rf "$PLIMSOLL_SESSION_VECTORS_OUT"
mkdir -p "$PLIMSOLL_SESSION_VECTORS_OUT"

step "C ABI: C suite under valgrind and AddressSanitizer"
bash tests/c/run.sh

step "C ABI: the Go module (bindings-go) under the race detector"
bash bindings-go/test.sh

step "bindings: Python (PyO3) and Node (napi-rs)"
bash bindings-python/test.sh
bash bindings-node/test.sh

step "the same session calls from Python, Node, C and Go, embedded and remote"
python3 tests/vectors/compare.py "$PLIMSOLL_SESSION_VECTORS_OUT"

step "artifacts: every one built once (scripts/dist.sh, the suite's dev profile) and installed where no build toolchain is"
dist_start=$SECONDS
PROFILE=dev bash scripts/dist.sh
prebuilt consumer
bash tests/dist/run.sh
echo "artifacts: built and checked in $((SECONDS - dist_start)) s"

step "benchmarks and examples: smoke runs (short form, dev/test profile, no timing assertion)"
# Every bench and example runs here once in a short form so none can rot; the
# examples that start a daemon run target/debug/plimsolld, built just now
# beside them (plimsolld/examples/support/daemon.rs), never a stale binary.
# Built for the default members together, as `cargo test` built them: the
# same features, so nothing is compiled again (a per-package `-p` build
# resolves features apart and rebuilds the core). Run from their paths.
cargo build -q --bins --examples
EXAMPLES=${CARGO_TARGET_DIR:-$ROOT/target}/debug/examples
smoke() { # smoke LABEL COMMAND...: runs it, prints its wall time
  local label=$1 t0=$SECONDS
  shift
  "$@"
  echo "smoke $label: $((SECONDS - t0)) s"
}
smoke "bench wasm (3 runs)" env PLIMSOLL_BENCH_RUNS=3 cargo test -q --bench wasm
smoke "example bench_wasm (3 runs)" "$EXAMPLES/bench_wasm" 3
smoke "example bench_docker (runc, 1 run)" env PLIMSOLL_BENCH_RUNTIMES=runc "$EXAMPLES/bench_docker" 1
smoke "example bench_sessions (runc, 1 session)" env PLIMSOLL_BENCH_RUNTIMES=runc PLIMSOLL_BENCH_RUNS=1 \
  "$EXAMPLES/bench_sessions"
smoke "example bench_wasm_client.py (20 runs, the published client)" \
  env PLIMSOLLD="${CARGO_TARGET_DIR:-$ROOT/target}/debug/plimsolld" "$VENV/bin/python" plimsolld/examples/bench_wasm_client.py 20

step "admission: bounded loopback load with random disconnects (wasm, then docker)"
"$EXAMPLES/load" 2000 32 10
LOAD_PROVIDER=docker "$EXAMPLES/load" 120 16 20 2

step "soak: bounded mixed runs and sessions; the daemon flat at rest, nothing left (wasm, then runc)"
"$EXAMPLES/soak" wasm 2000 8
"$EXAMPLES/soak" runc 200 4

step "stand-ins checked by the vendors' published clients (E2B: e2b 2.63.0; OpenShell: openshell 0.1.5; Docker Cloud's Connect contract: docker-sbx-api 0.36.0; runc, then runsc)"
cargo build -q -p plimsoll-standins
"$VENV/bin/python" tests/standins/e2b_sdk.py "$ROOT/target/debug/plimsoll-standin"
"$VENV/bin/python" tests/standins/e2b_sdk.py "$ROOT/target/debug/plimsoll-standin" --runtime runsc
"$VENV/bin/python" tests/standins/openshell_client.py "$ROOT/target/debug/plimsoll-standin"
"$VENV/bin/python" tests/standins/openshell_client.py "$ROOT/target/debug/plimsoll-standin" --runtime runsc
SBX_VENV="${PLIMSOLL_SBX_VENV:-$ROOT/target/venv-sbx}"
"$SBX_VENV/bin/python" tests/standins/dockercloud_sbx.py "$ROOT/target/debug/plimsoll-standin"
"$SBX_VENV/bin/python" tests/standins/dockercloud_sbx.py "$ROOT/target/debug/plimsoll-standin" --runtime runsc

step "the live test's own path (scripts/live.sh openshell), pointed at the OpenShell stand-in"
live_certs="$(mktemp -d)"
exec {live_out}< <("$ROOT/target/debug/plimsoll-standin" openshell --certs-dir "$live_certs" --runtime runsc \
  --image registry.invalid/plimsoll/project:latest=plimsoll/project:latest & echo "pid $!"; wait)
read -r _ live_pid <&"$live_out"
read -r live_addr <&"$live_out"
live_url="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["gateway"].replace("127.0.0.1","localhost"))' "$live_addr")"
SANDBOX_OPENSHELL_GATEWAY_URL="$live_url" SANDBOX_OPENSHELL_CA_FILE="$live_certs/ca.crt" \
  SANDBOX_OPENSHELL_CERT_FILE="$live_certs/tls.crt" SANDBOX_OPENSHELL_KEY_FILE="$live_certs/tls.key" \
  SANDBOX_OPENSHELL_IMAGE=registry.invalid/plimsoll/project:latest bash scripts/live.sh openshell
kill "$live_pid"; wait "$live_pid" 2>/dev/null || true
exec {live_out}<&-
rm -rf "$live_certs"

step "interop: the published plimsoll-client 0.23.0 against plimsolld"
cargo build -p plimsolld
if ! "$VENV/bin/python" -c 'import plimsoll_client, pytest, jwt, prometheus_client; from importlib.metadata import version; assert plimsoll_client.__version__ == "0.23.0" and version("prometheus-client") == "0.26.0"' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q plimsoll-client==0.23.0 prometheus-client==0.26.0 pytest pyjwt
fi
PLIMSOLLD="$ROOT/target/debug/plimsolld" "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/interop
