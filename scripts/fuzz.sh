#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time and fails on any crash.
#
#   bash scripts/fuzz.sh                      # 20 s per target (CI uses 15)
#   FUZZ_SECONDS=3600 bash scripts/fuzz.sh    # the long form: an hour per target
#   FUZZ_TARGETS="route request" bash scripts/fuzz.sh
#   FUZZ_SANITIZER=none bash scripts/fuzz.sh  # only if AddressSanitizer cannot link
#
# Installs the pinned cargo-fuzz if it is missing. Only a stable rustc exists
# here, so RUSTC_BOOTSTRAP=1 lets it take cargo-fuzz's -Z flags. Builds once
# (release, debug assertions on, ASan), then runs each target from a scratch
# corpus: fuzz/target/corpus/<target>, seeded from the committed
# fuzz/seeds/<target> (which is never written). Crashing inputs land in
# fuzz/target/artifacts/<target>/; keep one as a seed once the bug is fixed.
# Prints one line of figures per target. See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

CARGO_FUZZ_VERSION=0.13.2
SECONDS_EACH=${FUZZ_SECONDS:-20}
SANITIZER=${FUZZ_SANITIZER:-address}
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="$ROOT/fuzz/target"

if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  echo "installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
  cargo install --locked --quiet cargo-fuzz --version "=$CARGO_FUZZ_VERSION"
fi

FLAGS=(--fuzz-dir fuzz -O --debug-assertions --sanitizer "$SANITIZER")
TARGETS=${FUZZ_TARGETS:-$(cargo fuzz list --fuzz-dir fuzz)}
start=$(date +%s)
cargo fuzz build "${FLAGS[@]}"
echo "fuzz: built in $(($(date +%s) - start)) s (sanitizer $SANITIZER)"

BIN="$CARGO_TARGET_DIR/$(rustc -vV | sed -n 's/^host: //p')/release"
failed=()
for t in $TARGETS; do
  corpus="$CARGO_TARGET_DIR/corpus/$t" artifacts="$CARGO_TARGET_DIR/artifacts/$t" log="$CARGO_TARGET_DIR/fuzz-$t.log"
  mkdir -p "$corpus" "$artifacts"
  cp fuzz/seeds/"$t"/* "$corpus"/
  rc=0
  "$BIN/$t" -max_total_time="$SECONDS_EACH" -timeout=20 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || rc=$?
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/.*exec\/s: \([0-9]*\).*/\1/p' <<<"$done_line")
  corp=$(sed -n 's/.*corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' <<<"$done_line")
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    echo "fuzz $t: FAILED (exit $rc) after ${execs:-?} execs; log $log; crashing inputs:" >&2
    ls -1 "$artifacts" >&2 || true
    grep -E -A 12 'panicked|ERROR: (libFuzzer|AddressSanitizer)' "$log" | head -n 40 >&2 || true
  else
    printf 'fuzz %-14s %7s execs/s  %9s execs in %s s  corpus %s (seeds %s)\n' \
      "$t" "${rate:-?}" "${execs:-?}" "$SECONDS_EACH" "${corp:-?}" "$(ls fuzz/seeds/"$t" | wc -l)"
  fi
done
if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz: crashes in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: every target ran ${SECONDS_EACH} s without a crash ($(($(date +%s) - start)) s in all)"
