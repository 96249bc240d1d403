#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time and fails on any crash.
#
#   bash scripts/fuzz.sh                      # 20 s per target (CI uses 15)
#   FUZZ_SECONDS=3600 bash scripts/fuzz.sh    # the long form: an hour per target
#   FUZZ_TARGETS="route request" bash scripts/fuzz.sh
#   FUZZ_SANITIZER=none bash scripts/fuzz.sh  # only if AddressSanitizer cannot link
#   FUZZ_PROFILE=quick bash scripts/fuzz.sh   # opt-level 1: a quicker build of slower targets (CI)
#   FUZZ_BUILD_ONLY=1 bash scripts/fuzz.sh    # build the targets, run none
#
# Installs the pinned cargo-fuzz if it is missing. Only a stable rustc exists
# here, so RUSTC_BOOTSTRAP=1 lets it take cargo-fuzz's -Z flags. Builds once
# (release, debug assertions on, ASan), then runs each target from a scratch
# corpus: fuzz/target/corpus/<target>, seeded from the committed
# fuzz/seeds/<target> (which is never written), FUZZ_JOBS (default: the number
# of cores) targets at a time. Crashing inputs land in
# fuzz/target/artifacts/<target>/; keep one as a seed once the bug is fixed.
# Prints one line of figures per target. See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

CARGO_FUZZ_VERSION=0.13.2
SECONDS_EACH=${FUZZ_SECONDS:-20}
SANITIZER=${FUZZ_SANITIZER:-address}
PROFILE=${FUZZ_PROFILE:-release}
export RUSTC_BOOTSTRAP=1
WORK="$ROOT/fuzz/target"            # corpora, crashing inputs, logs
export CARGO_TARGET_DIR="$WORK"

if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  echo "installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
  cargo install --locked --quiet cargo-fuzz --version "=$CARGO_FUZZ_VERSION"
fi

case $PROFILE in
  release) FLAGS=(--fuzz-dir fuzz --release --debug-assertions --sanitizer "$SANITIZER") ;;
  quick) # opt-level 1: about 0.6x the build time, 0.3-0.5x the speed
    export CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_TARGET_DIR="$WORK/quick"
    FLAGS=(--fuzz-dir fuzz --release --debug-assertions --sanitizer "$SANITIZER") ;;
  *) echo "FUZZ_PROFILE must be release or quick" >&2; exit 2 ;;
esac
TARGETS=${FUZZ_TARGETS:-$(cargo fuzz list --fuzz-dir fuzz)}
start=$(date +%s)
cargo fuzz build "${FLAGS[@]}"
echo "fuzz: built in $(($(date +%s) - start)) s ($PROFILE, sanitizer $SANITIZER)"
# FUZZ_BUILD_ONLY=1: build and stop (scripts/test.sh builds early, runs later).
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

BIN="$CARGO_TARGET_DIR/$(rustc -vV | sed -n 's/^host: //p')/release"
JOBS=${FUZZ_JOBS:-$(nproc)}

# run_one TARGET: fuzzes it, then writes one line to fuzz-TARGET.result; fails on a crash.
run_one() {
  local t=$1 corpus="$WORK/corpus/$1" artifacts="$WORK/artifacts/$1"
  local log="$WORK/fuzz-$1.log" rc=0 done_line execs rate corp
  mkdir -p "$corpus" "$artifacts"
  cp fuzz/seeds/"$t"/* "$corpus"/
  "$BIN/$t" -max_total_time="$SECONDS_EACH" -timeout=20 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || rc=$?
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/.*exec\/s: \([0-9]*\).*/\1/p' <<<"$done_line")
  corp=$(sed -n 's/.*corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' <<<"$done_line")
  if [ "$rc" -ne 0 ]; then
    {
      echo "fuzz $t: FAILED (exit $rc) after ${execs:-?} execs; log $log; crashing inputs:"
      ls -1 "$artifacts" || true
      grep -E -A 12 'panicked|ERROR: (libFuzzer|AddressSanitizer)' "$log" | head -n 40 || true
    } >"$WORK/fuzz-$t.result"
    return 1
  fi
  printf 'fuzz %-14s %7s execs/s  %9s execs in %s s  corpus %s (seeds %s)\n' \
    "$t" "${rate:-?}" "${execs:-?}" "$SECONDS_EACH" "${corp:-?}" "$(ls fuzz/seeds/"$t" | wc -l)" \
    >"$WORK/fuzz-$t.result"
}

# At most JOBS targets at once, one core each.
declare -A pids
for t in $TARGETS; do
  rm -f "$WORK/fuzz-$t.result"
done
for t in $TARGETS; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  run_one "$t" &
  pids[$t]=$!
done
failed=()
for t in $TARGETS; do
  if wait "${pids[$t]}"; then
    cat "$WORK/fuzz-$t.result"
  else
    failed+=("$t")
    cat "$WORK/fuzz-$t.result" >&2 || echo "fuzz $t: failed before fuzzing" >&2
  fi
done
if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz: crashes in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: every target ran ${SECONDS_EACH} s without a crash ($JOBS at a time; $(($(date +%s) - start)) s in all)"
