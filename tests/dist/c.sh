#!/usr/bin/env bash
# In the consumer container: the C install tree into /usr/local, then the
# shipped example built three ways — shared through pkg-config, static, and
# with CMake — and run embedded and against the plimsolld image.
set -euo pipefail
tar -xzf /dist/capi/plimsoll-capi-*-linux-x86_64.tar.gz -C /
ldconfig
echo "c: pkg-config plimsoll $(pkg-config --modversion plimsoll): $(pkg-config --cflags --libs plimsoll)"
mkdir /tmp/c && cd /tmp/c
cp /usr/local/share/doc/plimsoll/examples/c/hello.c /usr/local/share/doc/plimsoll/examples/c/CMakeLists.txt .
expect() { # expect WHAT COMMAND...: the example prints 42 on the process tier
  local out
  out=$("${@:2}")
  [ "$out" = $'42\nisolation: process' ] || { echo "c: $1 printed: $out" >&2; exit 1; }
  echo "c: $1: 42 on process"
}
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror hello.c $(pkg-config --cflags --libs plimsoll) -o hello-shared
readelf -d hello-shared | grep -q 'NEEDED.*\[libplimsoll\.so\.0\]' || { echo "c: hello-shared does not need libplimsoll.so.0" >&2; exit 1; }
expect "shared (libplimsoll.so.0), embedded" ./hello-shared
expect "shared, remote" env PLIMSOLL_URL="$PLIMSOLL_URL" PLIMSOLL_TOKEN="$PLIMSOLL_TOKEN" ./hello-shared
read -r -a static_libs <<<"$(pkg-config --static --libs-only-l plimsoll | sed 's/-lplimsoll//')"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror hello.c $(pkg-config --cflags plimsoll) /usr/local/lib/libplimsoll.a "${static_libs[@]}" -o hello-static
! ldd hello-static | grep -q plimsoll || { echo "c: hello-static links libplimsoll dynamically" >&2; exit 1; }
expect "static (libplimsoll.a), embedded" ./hello-static
cmake -S . -B build >/dev/null && cmake --build build >/dev/null
expect "CMake (pkg_check_modules), embedded" ./build/hello
