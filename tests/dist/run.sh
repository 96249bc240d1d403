#!/usr/bin/env bash
# Installs every artifact of target/dist/ (scripts/dist.sh) where none of the
# build toolchain is, and runs plimsoll from each, embedded and against a
# running plimsolld:
#
#   bash scripts/dist.sh && bash tests/dist/run.sh
#
# 1. the plimsolld image (deploy/plimsolld.Dockerfile) serves the wasm provider
#    in a container of its own (`--version`, startup, a token);
# 2. a throwaway consumer container per artifact (tests/dist/consumer.Dockerfile:
#    the Debian base with Python, a C compiler, CMake and Go; no Rust, no clang,
#    no source tree; Node mounted from the host), sharing the daemon
#    container's network namespace so the daemon is on its loopback:
#    the wheel (python.sh, check.py), the npm tarballs (node.sh, check.cjs,
#    check.mjs), the C install tree (c.sh), the Go module (go.sh, main.go);
# 3. on the host: the sdist carries what it needs to build, and the systemd
#    unit passes `systemd-analyze verify` (with its exposure score printed).
#
# Fails on the first step that fails; prints each step's wall time and the total.
# `bash tests/dist/run.sh --image` only builds the consumer image (scripts/test.sh
# starts that early, in the background).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
DIST=${CARGO_TARGET_DIR:-$ROOT/target}/dist
VERSION=$(sed -n 's/^#define PLIMSOLL_VERSION "\(.*\)"$/\1/p' include/plimsoll.h)
START=$SECONDS
step() { printf '== dist check [%ss]: %s\n' "$((SECONDS - START))" "$*"; }
consumer_image() { # sets CONSUMER, building it when missing
  local base log
  # The base the sandbox images were built from (their io.plimsoll.base label).
  base=$(docker image inspect --format '{{index .Config.Labels "io.plimsoll.base"}}' "${PLIMSOLL_SNIPPET_IMAGE:-plimsoll/snippet:latest}" 2>/dev/null || true)
  base=${base:+plimsoll/base:$base}
  [ -n "$base" ] && docker image inspect "$base" >/dev/null 2>&1 || { echo "tests/dist: no plimsoll/base image; run images/build.sh" >&2; exit 1; }
  CONSUMER="plimsoll/dist-consumer:$( (cat tests/dist/consumer.Dockerfile; echo "$base") | sha256sum | cut -c1-12)"
  if ! docker image inspect "$CONSUMER" >/dev/null 2>&1; then
    log=$(mktemp)
    docker build -q --build-arg "BASE=$base" -f tests/dist/consumer.Dockerfile -t "$CONSUMER" tests/dist >"$log" 2>&1 \
      || { cat "$log" >&2; exit 1; }
    rm -f "$log"
  fi
}
if [ "${1:-}" = --image ]; then
  consumer_image
  echo "consumer image $CONSUMER"
  exit 0
fi
for f in "python/plimsoll-$VERSION.tar.gz" "node/plimsoll-$VERSION.tgz" "node/plimsoll-linux-x64-gnu-$VERSION.tgz" \
  "capi/plimsoll-capi-$VERSION-linux-x86_64.tar.gz" "go/plimsoll-go-$VERSION.tar.gz"; do
  [ -f "$DIST/$f" ] || { echo "tests/dist: $DIST/$f is missing; run scripts/dist.sh first" >&2; exit 1; }
done
ls "$DIST"/python/plimsoll-"$VERSION"-cp310-abi3-manylinux_*_x86_64.whl >/dev/null
docker image inspect "plimsoll/plimsolld:$VERSION" >/dev/null

step "the consumer image (Debian base + Python, gcc, pkg-config, CMake, Go; no Rust, no clang)"
consumer_image
# (Node is the base's own, the sandbox images' Node 24 LTS; npm is the host's,
# mounted for the Node step.)
docker run --rm "$CONSUMER" sh -c '! command -v cargo && ! command -v rustc && ! command -v clang && ! command -v wasm-ld' >/dev/null \
  || { echo "tests/dist: the consumer image has a build tool it must not have" >&2; exit 1; }

step "plimsolld image: --version, then serving the wasm provider"
docker run --rm "plimsoll/plimsolld:$VERSION" --version
TOKEN=dist-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
DAEMON=plimsoll-dist-$$
docker run -d --rm --name "$DAEMON" -e SANDBOX_PROVIDER=wasm -e SANDBOX_RATE_PER_MIN=0 \
  -e PLIMSOLL_ADDR=127.0.0.1:8746 -e PLIMSOLL_TOKEN="$TOKEN" "plimsoll/plimsolld:$VERSION" >/dev/null
trap 'docker rm -f "$DAEMON" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 120); do
  docker logs "$DAEMON" 2>&1 | grep -q '"message":"listening"' && break
  docker inspect "$DAEMON" >/dev/null 2>&1 || { echo "tests/dist: the plimsolld container exited" >&2; exit 1; }
  sleep 0.5
done
docker logs "$DAEMON" 2>&1 | grep -q '"message":"listening"' || { docker logs "$DAEMON" >&2; echo "tests/dist: plimsolld did not start" >&2; exit 1; }
docker logs "$DAEMON" 2>&1 | grep -o '"message":"serving".*"ready":true' >/dev/null
echo "plimsolld $VERSION serving wasm in container $DAEMON"

NPM_DIR=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
consumer() { # consumer SCRIPT [docker run options]: runs tests/dist/SCRIPT in a fresh consumer container
  local script=$1
  shift
  docker run --rm --network "container:$DAEMON" -v "$DIST:/dist:ro" -v "$ROOT/tests/dist:/checks:ro" \
    -e PLIMSOLL_URL=http://127.0.0.1:8746 -e PLIMSOLL_TOKEN="$TOKEN" "$@" "$CONSUMER" bash "/checks/$script"
}
step "Python: the abi3 wheel in a fresh virtualenv"
consumer python.sh
step "Node: the npm tarballs in an empty project (the image's Node $(docker run --rm "$CONSUMER" node --version), the host's npm)"
consumer node.sh -v "$NPM_DIR:/usr/local/lib/node_modules/npm:ro"
step "C: the install tree, the example shared, static and with CMake"
consumer c.sh
step "Go: the module from a program outside its tree"
consumer go.sh

step "sdist: carries the workspace crates and the QuickJS guest"
listing=$(tar -tzf "$DIST/python/plimsoll-$VERSION.tar.gz")
for f in pyproject.toml Cargo.toml Cargo.lock bindings-python/Cargo.toml plimsoll-core/Cargo.toml plimsoll-core/build.rs \
  plimsoll-core/guest/Cargo.toml plimsoll-core/guest/Cargo.lock plimsoll-core/guest/src/lib.rs python/plimsoll/_native.pyi; do
  grep -qx "plimsoll-$VERSION/$f" <<<"$listing" || { echo "tests/dist: the sdist lacks $f" >&2; exit 1; }
done
echo "sdist: $(wc -l <<<"$listing") files"

step "systemd unit: systemd-analyze verify"
command -v systemd-analyze >/dev/null || apt-get install -y -q systemd >/dev/null
unit=$(mktemp -d)/plimsolld.service
# The unit names /usr/local/bin/plimsolld; verify checks the binary exists, so point it at one.
sed "s#^ExecStart=/usr/local/bin/plimsolld#ExecStart=$(command -v true)#" deploy/plimsolld.service >"$unit"
systemd-analyze verify "$unit"
systemd-analyze security --offline=yes "$unit" 2>/dev/null | tail -n 1
rm -rf "$(dirname "$unit")"
step "every artifact installed and ran embedded and against plimsolld: $((SECONDS - START)) s"
