#!/usr/bin/env bash
# Builds the artifacts plimsoll ships, each once, into target/dist/:
#
#   bash scripts/dist.sh                      # every artifact, release profile
#   bash scripts/dist.sh python node          # some: python node capi go image
#   PROFILE=dev bash scripts/dist.sh          # the test build's profile (CI: it
#                                             # reuses what the suite compiled)
#
# PLIMSOLL_CAPI_NO_BUILD=1 takes libplimsoll as built already, and
# PLIMSOLLD_BIN=PATH a plimsolld built already (deploy/build-image.sh): the test
# command passes both, its own build's, so nothing is compiled twice.
#
#   target/dist/python/  plimsoll-<v>-cp310-abi3-manylinux_<glibc>_x86_64.whl (maturin
#                        1.16.0, its auditwheel check) and the sdist plimsoll-<v>.tar.gz
#   target/dist/node/    plimsoll-<v>.tgz and plimsoll-linux-x64-gnu-<v>.tgz (npm pack);
#                        the main package lists the platform package in optionalDependencies
#   target/dist/capi/    plimsoll-capi-<v>-linux-x86_64.tar.gz: usr/local/{include,lib}
#                        as scripts/install-capi.sh lays them out, and the C example
#   target/dist/go/      plimsoll-go-<v>.tar.gz and bindings-go/: the Go module's source
#   image                plimsoll/plimsolld:<v> and :latest (deploy/build-image.sh)
#
# Needs what the build needs (the Rust toolchain, the wasm guest's toolchain,
# Node with npm, python3 with venv, dockerd and images/build.sh's base image for
# the image); the artifacts need none of it. tests/dist/run.sh installs each in
# a throwaway container.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PROFILE=${PROFILE:-release}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
DIST=$CARGO_TARGET_DIR/dist
VERSION=$(sed -n 's/^#define PLIMSOLL_VERSION "\(.*\)"$/\1/p' include/plimsoll.h)
case $PROFILE in dev) out=debug ;; *) out=$PROFILE ;; esac
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(python node capi go image)
say() { printf '== dist: %s\n' "$*" >&2; }
# Reproducible tarballs: sorted, no owner, no times.
retar() { # retar OUT.tar.gz DIR NAME...
  local tarball=$1 dir=$2
  shift 2
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$dir" -cf - "$@" | gzip -n >"$tarball"
}

python_dist() {
  local venv=$CARGO_TARGET_DIR/dist-venv
  [ -x "$venv/bin/maturin" ] && [ "$("$venv/bin/maturin" --version)" = "maturin 1.16.0" ] || {
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check maturin==1.16.0
  }
  rm -rf "$DIST/python" && mkdir -p "$DIST/python"
  say "python: wheel ($PROFILE)"
  (cd bindings-python && "$venv/bin/maturin" build -q --profile "$PROFILE" --strip --compatibility pypi --auditwheel check --out "$DIST/python")
  say "python: sdist"
  (cd bindings-python && "$venv/bin/maturin" sdist --out "$DIST/python" >/dev/null 2>&1 || "$venv/bin/maturin" sdist --out "$DIST/python")
  # cargo's package list leaves out plimsoll-core/guest (a crate of its own,
  # built for wasm32-wasip1 by plimsoll-core's build.rs) and maturin takes no
  # path outside bindings-python: add its tracked files, or the sdist cannot build.
  local sdist=$DIST/python/plimsoll-$VERSION.tar.gz tmp
  tmp=$(mktemp -d)
  tar -xzf "$sdist" -C "$tmp"
  git ls-files plimsoll-core/guest | while read -r f; do
    install -D -m 0644 "$f" "$tmp/plimsoll-$VERSION/$f"
  done
  retar "$sdist" "$tmp" "plimsoll-$VERSION"
  rm -rf "$tmp"
}

node_dist() {
  say "node: addon ($PROFILE)"
  (cd bindings-node && npm ci --no-audit --no-fund --loglevel=error >/dev/null \
    && if [ "$PROFILE" = release ]; then npm run -s build:release; else npm run -s build; fi) >/dev/null
  rm -rf "$DIST/node" && mkdir -p "$DIST/node"
  local stage
  stage=$(mktemp -d)
  cp -r bindings-node/npm/linux-x64-gnu "$stage/platform"
  cp bindings-node/plimsoll.linux-x64-gnu.node "$stage/platform/"
  strip --strip-debug "$stage/platform/plimsoll.linux-x64-gnu.node"
  mkdir "$stage/main"
  # The main package as published: its files, and a manifest without the
  # build's scripts and dev dependencies, naming the platform package.
  node -e '
    const fs = require("fs"), path = require("path")
    const [src, dst] = process.argv.slice(1)
    const pkg = JSON.parse(fs.readFileSync(path.join(src, "package.json"), "utf8"))
    for (const f of pkg.files) fs.copyFileSync(path.join(src, f), path.join(dst, f))
    delete pkg.scripts
    delete pkg.devDependencies
    pkg.optionalDependencies = { "plimsoll-linux-x64-gnu": pkg.version }
    fs.writeFileSync(path.join(dst, "package.json"), JSON.stringify(pkg, null, 2) + "\n")
  ' "$ROOT/bindings-node" "$stage/main"
  for p in platform main; do
    (cd "$stage/$p" && npm pack --silent --pack-destination "$DIST/node" >/dev/null)
  done
  rm -rf "$stage"
}

capi_dist() {
  say "capi: libplimsoll ($PROFILE), staged as scripts/install-capi.sh installs it"
  rm -rf "$DIST/capi" && mkdir -p "$DIST/capi"
  local stage
  stage=$(mktemp -d)
  DESTDIR=$stage PREFIX=/usr/local PROFILE=$PROFILE bash scripts/install-capi.sh 2>/dev/null
  strip --strip-debug "$stage/usr/local/lib/libplimsoll.so.$VERSION"
  install -D -m 0644 examples/c/hello.c "$stage/usr/local/share/doc/plimsoll/examples/c/hello.c"
  install -D -m 0644 examples/c/CMakeLists.txt "$stage/usr/local/share/doc/plimsoll/examples/c/CMakeLists.txt"
  retar "$DIST/capi/plimsoll-capi-$VERSION-linux-x86_64.tar.gz" "$stage" usr
  rm -rf "$stage"
}

go_dist() {
  say "go: the module's source"
  rm -rf "$DIST/go" && mkdir -p "$DIST/go/bindings-go"
  git ls-files bindings-go | grep -v '^bindings-go/test.sh$' | while read -r f; do
    install -D -m 0644 "$f" "$DIST/go/$f"
  done
  retar "$DIST/go/plimsoll-go-$VERSION.tar.gz" "$DIST/go" bindings-go
}

image_dist() {
  say "image: plimsolld ($PROFILE)"
  PROFILE=$PROFILE bash deploy/build-image.sh
}

for part in "${parts[@]}"; do
  case $part in
    python | node | capi | go | image) "${part}_dist" ;;
    *) echo "dist: no artifact '$part' (python node capi go image)" >&2; exit 2 ;;
  esac
done
say "done ($PROFILE):"
find "$DIST" -maxdepth 2 -type f \( -name '*.whl' -o -name '*.tar.gz' -o -name '*.tgz' \) -printf '%s\t%P\n' 2>/dev/null \
  | sort -k2 | awk -F'\t' '{ printf "  %8.1f MB  %s\n", $1 / 1048576, $2 }' >&2
