#!/usr/bin/env bash
# Installs what plimsoll-core's build needs to compile the QuickJS guest
# (plimsoll-core/guest) for wasm32-wasip1 from source. Idempotent: a second run
# only checks.
#
#   bash scripts/install-wasm-toolchain.sh      # as root (apt-get), or with the packages present
#
#   rustup target   wasm32-wasip1 (the guest's Rust standard library)
#   Debian packages clang lld wasi-libc libclang-rt-14-dev-wasm32
#                   (QuickJS's C sources are compiled by clang against wasi-libc;
#                   nothing is downloaded from outside the Debian mirror and crates.io)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

log() { printf '[install-wasm-toolchain] %s\n' "$*" >&2; }
die() { printf '[install-wasm-toolchain] ERROR: %s\n' "$*" >&2; exit 1; }

command -v rustup >/dev/null 2>&1 || die "rustup is not on PATH"
if rustup target list --installed | grep -qx wasm32-wasip1; then
  log "rustup target wasm32-wasip1: present"
else
  log "rustup target add wasm32-wasip1"
  rustup target add wasm32-wasip1
fi

PACKAGES=(clang lld wasi-libc libclang-rt-14-dev-wasm32)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  log "packages ${PACKAGES[*]}: present"
else
  [ "$(id -u)" -eq 0 ] || die "missing packages ${missing[*]}: run as root, or apt-get install them"
  log "apt-get install ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The checks plimsoll-core/build.rs makes, so a broken install shows here first.
command -v clang >/dev/null 2>&1 || die "clang is not on PATH after install"
[ -f /usr/lib/wasm32-wasi/libc.a ] || [ -f /usr/share/wasi-sysroot/lib/wasm32-wasi/libc.a ] || die "wasi-libc's libc.a was not found"
log "ready"
