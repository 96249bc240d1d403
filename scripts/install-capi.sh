#!/usr/bin/env bash
# Installs plimsoll's C ABI: the header, libplimsoll.so (soname libplimsoll.so.0),
# libplimsoll.a and a pkg-config file, the usual GNU layout under PREFIX:
#
#   PREFIX=/usr/local bash scripts/install-capi.sh        # as root
#   DESTDIR=/tmp/stage PREFIX=/usr bash scripts/install-capi.sh   # staged, for a package
#
#   $PREFIX/include/plimsoll.h
#   $LIBDIR/libplimsoll.so.<version>   libplimsoll.so.0 -> it   libplimsoll.so -> libplimsoll.so.0
#   $LIBDIR/libplimsoll.a
#   $LIBDIR/pkgconfig/plimsoll.pc      (`pkg-config --cflags --libs plimsoll`;
#                                       `--static` adds the system libraries libplimsoll.a needs)
#
# Variables: PREFIX (/usr/local), LIBDIR ($PREFIX/lib), INCLUDEDIR
# ($PREFIX/include), DESTDIR (empty: a staging root prepended to every path
# written, never to the paths inside plimsoll.pc), PROFILE (release; `dev` for
# the test build), CARGO_TARGET_DIR (the workspace's target/), and
# PLIMSOLL_CAPI_NO_BUILD=1 to install what the profile's last build left
# instead of running `cargo build -p plimsoll-capi` first.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-/usr/local}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
DESTDIR=${DESTDIR:-}
PROFILE=${PROFILE:-release}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
for p in "$PREFIX" "$LIBDIR" "$INCLUDEDIR"; do
  case $p in /*) ;; *) echo "install-capi: PREFIX, LIBDIR and INCLUDEDIR must be absolute: $p" >&2; exit 2 ;; esac
done
case $PROFILE in dev) out=debug ;; *) out=$PROFILE ;; esac

if [ "${PLIMSOLL_CAPI_NO_BUILD:-0}" != 1 ]; then
  (cd "$ROOT" && cargo build -q -p plimsoll-capi --profile "$PROFILE")
fi
VERSION=$(sed -n 's/^#define PLIMSOLL_VERSION "\(.*\)"$/\1/p' "$ROOT/include/plimsoll.h")
MAJOR=${VERSION%%.*}
[ -n "$VERSION" ] || { echo "install-capi: no PLIMSOLL_VERSION in include/plimsoll.h" >&2; exit 1; }
for f in libplimsoll.so libplimsoll.a; do
  [ -f "$TARGET/$out/$f" ] || { echo "install-capi: $TARGET/$out/$f is missing (build with --profile $PROFILE)" >&2; exit 1; }
done
soname=$(objdump -p "$TARGET/$out/libplimsoll.so" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
if [ -n "$soname" ] && [ "$soname" != "libplimsoll.so.$MAJOR" ]; then
  echo "install-capi: $TARGET/$out/libplimsoll.so has soname $soname, not libplimsoll.so.$MAJOR" >&2
  exit 1
fi

install -d "$DESTDIR$INCLUDEDIR" "$DESTDIR$LIBDIR/pkgconfig"
install -m 0644 "$ROOT/include/plimsoll.h" "$DESTDIR$INCLUDEDIR/plimsoll.h"
install -m 0755 "$TARGET/$out/libplimsoll.so" "$DESTDIR$LIBDIR/libplimsoll.so.$VERSION"
ln -sfn "libplimsoll.so.$VERSION" "$DESTDIR$LIBDIR/libplimsoll.so.$MAJOR"
ln -sfn "libplimsoll.so.$MAJOR" "$DESTDIR$LIBDIR/libplimsoll.so"
install -m 0644 "$TARGET/$out/libplimsoll.a" "$DESTDIR$LIBDIR/libplimsoll.a"
# The static library's system libraries: `rustc --print native-static-libs`
# for this target (the same list on every glibc Linux).
cat >"$DESTDIR$LIBDIR/pkgconfig/plimsoll.pc" <<PC
prefix=$PREFIX
libdir=$LIBDIR
includedir=$INCLUDEDIR

Name: plimsoll
Description: Run untrusted code behind a proven isolation tier (plimsoll's C ABI)
Version: $VERSION
Libs: -L\${libdir} -lplimsoll
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
Cflags: -I\${includedir}
PC
echo "installed plimsoll $VERSION ($PROFILE) under $DESTDIR$PREFIX: include/plimsoll.h, libplimsoll.so.$VERSION (soname libplimsoll.so.$MAJOR), libplimsoll.a, pkgconfig/plimsoll.pc" >&2
