#!/usr/bin/env bash
# Builds libplimsoll and the C test, then runs the test twice: linked to
# libplimsoll.so under valgrind (no errors, nothing definitely or indirectly
# lost), and linked to libplimsoll.a with AddressSanitizer (and LeakSanitizer)
# on the C side. Both drive two real plimsolld started here (disabled and wasm
# providers). The embedded wasm engine runs under AddressSanitizer only:
# wasmtime's pooling allocator reserves more address space (65 slots of 4 GiB
# and guards) than valgrind can map, so under valgrind real wasm snippets run
# through the daemon instead.
#
#   bash tests/c/run.sh
#
# Needs: gcc (with libasan), valgrind; clang, when present, also compiles the
# test (strict flags) as a second compiler's check of the header. Prints "N passed, 0 failed" last and
# exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
LIB=$CARGO_TARGET_DIR/debug
PREFIX=$CARGO_TARGET_DIR/capi-dev
OUT=$CARGO_TARGET_DIR/c-tests
mkdir -p "$OUT"

for tool in gcc valgrind; do
  command -v "$tool" >/dev/null || { echo "tests/c/run.sh needs $tool" >&2; exit 1; }
done

# PLIMSOLL_CAPI_NO_BUILD=1: libplimsoll and PLIMSOLLD (a plimsolld) are built
# already (the test command builds each once, for every suite).
if [ "${PLIMSOLL_CAPI_NO_BUILD:-0}" != 1 ]; then
  echo "== build libplimsoll and plimsolld"
  cargo build -p plimsoll-capi -p plimsolld
fi
echo "== install it under $PREFIX (scripts/install-capi.sh), found with pkg-config as a user's build finds it"
PREFIX=$PREFIX PROFILE=dev PLIMSOLL_CAPI_NO_BUILD=1 bash scripts/install-capi.sh
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig

read -r -a PC_CFLAGS <<<"$(pkg-config --cflags plimsoll)"
read -r -a PC_LIBS <<<"$(pkg-config --libs plimsoll)"
# The static library's system dependencies (plimsoll.pc's Libs.private).
read -r -a STATIC_LIBS <<<"$(pkg-config --static --libs-only-l plimsoll | sed 's/-lplimsoll//')"
CFLAGS=(-std=c11 -Wall -Wextra -Werror -pedantic -g "${PC_CFLAGS[@]}")

echo "== compile (shared, for valgrind)"
gcc "${CFLAGS[@]}" tests/c/test_plimsoll.c "${PC_LIBS[@]}" -Wl,-rpath,"$PREFIX/lib" -lpthread \
  -o "$OUT/test_shared"
# The soname is what the program asks the loader for.
readelf -d "$OUT/test_shared" | grep -q 'NEEDED.*\[libplimsoll\.so\.0\]' \
  || { echo "test_shared does not need libplimsoll.so.0:" >&2; readelf -d "$OUT/test_shared" >&2; exit 1; }
echo "== compile (static, AddressSanitizer)"
gcc "${CFLAGS[@]}" -fsanitize=address -fno-omit-frame-pointer tests/c/test_plimsoll.c \
  "$PREFIX/lib/libplimsoll.a" "${STATIC_LIBS[@]}" -o "$OUT/test_asan"
if command -v clang >/dev/null; then
  echo "== clang -fsyntax-only"
  clang "${CFLAGS[@]}" -fsyntax-only tests/c/test_plimsoll.c
fi

# The shared verification vectors, one case a line for the C suite.
python3 - "$ROOT/tests/vectors/verify.json" >"$OUT/vectors.tsv" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
dumps = lambda o: json.dumps(o, separators=(",", ":"))
for c in v["single"]:
    print("\t".join([c["expect"], c["name"], dumps(c["request"]), dumps(c["response"])]))
for c in v["unreadable"]:
    print("\t".join([c["expect"], c["name"], c["requestText"], c["responseText"]]))
PY
export PLIMSOLL_VECTORS_TSV=$OUT/vectors.tsv

# The shared session calls, for the AddressSanitizer run ($IDENTITY kept: the
# suite fills in the identity each engine describes).
python3 - "$ROOT/tests/vectors/sessions.json" >"$OUT/sessions.tsv" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
dumps = lambda o: json.dumps(o, separators=(",", ":"))
print("open\t" + dumps(v["open"]))
for c in v["calls"]:
    w = c["want"]
    print("\t".join([c["name"], dumps(c["request"]), w.get("error", "ok"), w.get("minimumIsolation", "-"), w.get("softwareRuleId", "-")]))
PY

# Daemons for the remote tests: the disabled provider and the wasm provider.
# shellcheck source=tests/daemon.sh
. tests/daemon.sh
start_test_daemons "${PLIMSOLLD:-$LIB/plimsolld}" "$OUT"

total_pass=0
total_fail=0
tally() { # $1: the test's output file
  local line
  line=$(tail -n1 "$1")
  if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    total_pass=$((total_pass + BASH_REMATCH[1]))
    total_fail=$((total_fail + BASH_REMATCH[2]))
  else
    total_fail=$((total_fail + 1))
  fi
}

echo "== valgrind"
set +e
valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --error-exitcode=1 \
  env PLIMSOLL_TEST_WASM=0 "$OUT/test_shared" >"$OUT/valgrind.out"
rc=$?
set -e
cat "$OUT/valgrind.out"
tally "$OUT/valgrind.out"
if [ $rc -ne 0 ]; then
  echo "valgrind run failed (exit $rc)" >&2
  total_fail=$((total_fail + 1))
fi

echo "== AddressSanitizer"
set +e
PLIMSOLL_TEST_WASM=1 PLIMSOLL_SESSION_VECTORS_TSV=$OUT/sessions.tsv \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 "$OUT/test_asan" >"$OUT/asan.out"
rc=$?
set -e
cat "$OUT/asan.out"
tally "$OUT/asan.out"
if [ $rc -ne 0 ]; then
  echo "AddressSanitizer run failed (exit $rc)" >&2
  total_fail=$((total_fail + 1))
fi

echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
