#!/usr/bin/env bash
# Prepare a fresh Debian (bookworm) machine for plimsoll's test suite.
#
#   bash .ci/setup-host.sh            # as root; idempotent, a second run is fast
#
# Stages (each timed):
#   packages  apt-get install, only if missing: docker.io runsc busybox-static
#             valgrind golang-go, and for the fault tests (plimsolld/tests/faults.rs)
#             containerd e2fsprogs mount util-linux
#             (+ python3-venv if `python3 -m venv` cannot work)
#   config    /etc/docker/daemon.json registering the gVisor runtime "runsc",
#             and three test runtimes (runc reporting 1.1.11 and 1.3.6, runsc
#             reporting release-20180801.0) for the advisory tests
#   dockerd   start dockerd (no systemd here) or restart it if the config changed
#   verify    runtimes runc+runsc, image plimsoll/busybox:test, `echo ok` under both
#   venv      ${PLIMSOLL_VENV:-$ROOT/target/venv} with plimsoll-client==0.23.0 + pytest
#   wasm      scripts/install-wasm-toolchain.sh: the rustup target and Debian
#             packages plimsoll-core's build needs for its QuickJS guest
#   tools     the pinned cbindgen (scripts/gen-header.sh) and cargo-fuzz
#             (scripts/fuzz.sh), `cargo install --locked` when missing
#
# Progress goes to stderr; the only line on stdout is the venv path, so
#   VENV="$(bash .ci/setup-host.sh)"   works.
# dockerd is left running in the background (log: /var/log/dockerd.log).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PLIMSOLL_VENV:-$ROOT/target/venv}"
IMAGE="plimsoll/busybox:test"
CLIENT_VERSION="0.23.0"
# The vendor client that checks the E2B stand-in (tests/standins/e2b_sdk.py).
E2B_SDK_VERSION="2.63.0"
# The vendor client that checks the OpenShell stand-in (tests/standins/openshell_client.py).
OPENSHELL_VERSION="0.1.5"
# The OpenMetrics parser that reads plimsolld's /metrics (tests/interop/test_metrics.py).
PROMETHEUS_CLIENT_VERSION="0.26.0"
# The vendor client that checks the Docker Cloud stand-in's Connect contract
# (tests/standins/dockercloud_sbx.py). It pins connectrpc and protobuf to
# versions the e2b SDK does not take, so it has its own venv.
SBX_API_VERSION="0.36.0"
SBX_VENV="${PLIMSOLL_SBX_VENV:-$ROOT/target/venv-sbx}"
DAEMON_JSON=/etc/docker/daemon.json
DOCKERD_LOG=/var/log/dockerd.log
APT_LOG=/var/log/plimsoll-setup-apt.log
export DEBIAN_FRONTEND=noninteractive

log() { printf '[setup-host] %s\n' "$*" >&2; }
die() { printf '[setup-host] ERROR: %s\n' "$*" >&2; exit 1; }

now_ms() { local t; t="$(date +%s%N)"; echo $((t / 1000000)); }
TIMINGS=()
stage() { # stage NAME FUNCTION
  local name="$1" fn="$2" t0 t1 dur
  log "== stage $name"
  t0="$(now_ms)"
  "$fn"
  t1="$(now_ms)"
  dur="$(printf '%d.%03d' $(((t1 - t0) / 1000)) $(((t1 - t0) % 1000)))"
  TIMINGS+=("$(printf '%-9s %8ss' "$name" "$dur")")
  log "== stage $name done in ${dur}s"
}

[ "$(id -u)" -eq 0 ] || die "must run as root"

# ---------------------------------------------------------------- packages
pkg_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

venv_ok() { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; }

python_can_venv() {
  # Real check: `python3 -m venv` needs both venv and ensurepip (Debian's system
  # python ships ensurepip only in python3-venv).
  local d rc=0
  d="$(mktemp -d)"
  python3 -m venv "$d/v" >/dev/null 2>&1 || rc=1
  rm -rf "$d"
  return "$rc"
}

cgroups_mounted() { grep -qE '^[^ ]+ /sys/fs/cgroup[/ ]?[^ ]* (cgroup|cgroup2) ' /proc/mounts; }

apt_run() {
  if ! apt-get -y -q -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=300 "$@" >>"$APT_LOG" 2>&1; then
    tail -n 30 "$APT_LOG" >&2 || true
    die "apt-get $* failed (full log: $APT_LOG)"
  fi
}

stage_packages() {
  # containerd, e2fsprogs (mkfs.ext4), mount (losetup/mount -o loop) and
  # util-linux (fallocate): the fault tests' private dockerd and its small disk.
  local want=(docker.io runsc busybox-static valgrind golang-go containerd e2fsprogs mount util-linux) missing=() p
  command -v python3 >/dev/null || want+=(python3)
  if ! venv_ok && command -v python3 >/dev/null && ! python_can_venv; then
    log "python3 -m venv does not work: adding python3-venv"
    want+=(python3-venv)
  fi
  cgroups_mounted || want+=(cgroupfs-mount)
  for p in "${want[@]}"; do pkg_installed "$p" || missing+=("$p"); done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "all packages present: ${want[*]}"
  else
    log "installing: ${missing[*]} (apt log: $APT_LOG)"
    apt_run update
    # --no-install-recommends: docker.io recommends apparmor/needrestart/git, none needed.
    apt_run install --no-install-recommends "${missing[@]}"
    for p in "${missing[@]}"; do pkg_installed "$p" || die "package $p did not install"; done
    log "installed: ${missing[*]}"
  fi
  if ! cgroups_mounted; then
    command -v cgroupfs-mount >/dev/null && cgroupfs-mount
    cgroups_mounted || die "no cgroup filesystem mounted under /sys/fs/cgroup"
  fi
  command -v dockerd >/dev/null || die "dockerd not found after installing docker.io"
  command -v runsc >/dev/null || die "runsc not found after installing runsc"
  command -v containerd >/dev/null || die "containerd not found after installing containerd"
  command -v mkfs.ext4 >/dev/null || [ -x /sbin/mkfs.ext4 ] || die "mkfs.ext4 not found after installing e2fsprogs"
  [ -x /bin/busybox ] || die "/bin/busybox missing after installing busybox-static"
}

# ---------------------------------------------------------------- config
CONFIG_CHANGED=0
# Test runtimes for the advisory tests (plimsoll-core/tests/docker.rs): the
# machine's runc, reporting another release when asked its version, so that
# startup's judgement of a known escape is tested on real containers.
TEST_RUNTIMES=/usr/local/libexec/plimsoll-test
REPORTED_RUNC=(1.1.11 1.3.6)
install_reporting_runc() { # VERSION: $TEST_RUNTIMES/runc-VERSION
  local v="$1" runc tmp
  runc="$(command -v runc)"
  mkdir -p "$TEST_RUNTIMES"
  tmp="$(mktemp)"
  cat >"$tmp" <<EOF
#!/bin/sh
# plimsoll's test runtime: $runc, reporting release $v (advisory tests only).
if [ "\$1" = "--version" ]; then
  printf 'runc version $v\\ncommit: v$v-0-plimsoll-test\\nspec: 1.0.2-dev\\n'
  exit 0
fi
exec $runc "\$@"
EOF
  install -m 0755 "$tmp" "$TEST_RUNTIMES/runc-$v"
  rm -f "$tmp"
}

# The machine's runsc, reporting a gVisor build from before the fix of
# CVE-2018-16359. Docker paints the kernel tier only on a program named runsc,
# so it lives in a directory of its own: $TEST_RUNTIMES/runsc-RELEASE/runsc.
REPORTED_RUNSC=20180801.0
install_reporting_runsc() { # RELEASE
  local v="$1" runsc tmp
  runsc="$(command -v runsc)"
  mkdir -p "$TEST_RUNTIMES/runsc-$v"
  tmp="$(mktemp)"
  cat >"$tmp" <<EOF
#!/bin/sh
# plimsoll's test runtime: $runsc, reporting release $v (advisory tests only).
if [ "\$1" = "--version" ]; then
  printf 'runsc version release-$v\\nspec: 1.0.2-dev\\n'
  exit 0
fi
exec $runsc "\$@"
EOF
  install -m 0755 "$tmp" "$TEST_RUNTIMES/runsc-$v/runsc"
  rm -f "$tmp"
}

stage_config() {
  local runsc tmp v
  runsc="$(command -v runsc)"
  case "$runsc" in /*) ;; *) die "runsc is not an absolute path: $runsc" ;; esac
  for v in "${REPORTED_RUNC[@]}"; do install_reporting_runc "$v"; done
  install_reporting_runsc "$REPORTED_RUNSC"
  mkdir -p "$(dirname "$DAEMON_JSON")"
  tmp="$(mktemp)"
  cat >"$tmp" <<EOF
{
  "runtimes": {
    "runsc": {
      "path": "$runsc",
      "runtimeArgs": ["--host-uds=open", "--network=none", "--oci-seccomp"]
    },
    "plimsoll-runc-${REPORTED_RUNC[0]}": {"path": "$TEST_RUNTIMES/runc-${REPORTED_RUNC[0]}"},
    "plimsoll-runc-${REPORTED_RUNC[1]}": {"path": "$TEST_RUNTIMES/runc-${REPORTED_RUNC[1]}"},
    "plimsoll-runsc-$REPORTED_RUNSC": {
      "path": "$TEST_RUNTIMES/runsc-$REPORTED_RUNSC/runsc",
      "runtimeArgs": ["--host-uds=open", "--network=none", "--oci-seccomp"]
    }
  }
}
EOF
  if [ -f "$DAEMON_JSON" ] && cmp -s "$tmp" "$DAEMON_JSON"; then
    rm -f "$tmp"
    log "$DAEMON_JSON already up to date (runsc=$runsc)"
  else
    [ -f "$DAEMON_JSON" ] && cp "$DAEMON_JSON" "$DAEMON_JSON.bak"
    install -m 0644 "$tmp" "$DAEMON_JSON"
    rm -f "$tmp"
    CONFIG_CHANGED=1
    log "wrote $DAEMON_JSON (runsc=$runsc)"
  fi
}

# ---------------------------------------------------------------- dockerd
dockerd_pid() { # prints the pid of a running dockerd, if any
  local f pid comm
  for f in /run/docker.pid /var/run/docker.pid; do
    if [ -r "$f" ]; then
      pid="$(cat "$f" 2>/dev/null || true)"
      if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = dockerd ]; then
        echo "$pid"; return 0
      fi
    fi
  done
  for f in /proc/[0-9]*/comm; do
    comm="$(cat "$f" 2>/dev/null || true)"
    if [ "$comm" = dockerd ]; then
      pid="${f#/proc/}"; echo "${pid%/comm}"; return 0
    fi
  done
  return 1
}

docker_answers() { timeout 10 docker info >/dev/null 2>&1; }

stop_dockerd() {
  local pid="$1" i
  log "stopping dockerd (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 60); do
    [ -d "/proc/$pid" ] || return 0
    sleep 0.5
  done
  log "dockerd did not stop in 30 s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  sleep 1
}

start_dockerd() {
  log "starting dockerd (log: $DOCKERD_LOG)"
  printf '\n==== %s dockerd started by setup-host.sh\n' "$(date -Is)" >>"$DOCKERD_LOG"
  # setsid + all fds redirected: dockerd outlives this script and holds none of
  # the caller's pipes open.
  setsid nohup dockerd </dev/null >>"$DOCKERD_LOG" 2>&1 &
  local pid=$! i
  for i in $(seq 1 120); do # bounded: 60 s
    if docker_answers; then log "dockerd answers (pid $pid) after ~$((i / 2)) s"; return 0; fi
    if ! [ -d "/proc/$pid" ]; then
      tail -n 40 "$DOCKERD_LOG" >&2 || true
      die "dockerd exited during startup (see $DOCKERD_LOG)"
    fi
    sleep 0.5
  done
  tail -n 40 "$DOCKERD_LOG" >&2 || true
  die "dockerd did not answer 'docker info' within 60 s (see $DOCKERD_LOG)"
}

stage_dockerd() {
  local pid
  if pid="$(dockerd_pid)"; then
    if [ "$CONFIG_CHANGED" -eq 1 ]; then
      log "daemon.json changed: restarting dockerd"
      stop_dockerd "$pid"
      start_dockerd
    elif docker_answers; then
      log "dockerd already running (pid $pid), config unchanged"
    else
      log "dockerd (pid $pid) running but not answering: restarting"
      stop_dockerd "$pid"
      start_dockerd
    fi
  else
    start_dockerd
  fi
}

# ---------------------------------------------------------------- verify
build_image() {
  local dir applet
  dir="$(mktemp -d)"
  mkdir -p "$dir/bin" "$dir/sbin" "$dir/usr/bin" "$dir/usr/sbin" \
    "$dir/tmp" "$dir/proc" "$dir/sys" "$dir/dev" "$dir/etc" "$dir/root"
  chmod 1777 "$dir/tmp"
  cp /bin/busybox "$dir/bin/busybox"
  while read -r applet; do
    [ -n "$applet" ] && [ "$applet" != bin/busybox ] || continue
    [ -e "$dir/$applet" ] || ln -s /bin/busybox "$dir/$applet"
  done < <(/bin/busybox --list-full)
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
  tar --numeric-owner --owner=0 --group=0 -C "$dir" -c . |
    docker import -c 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' -c 'CMD ["/bin/sh"]' - "$IMAGE" >/dev/null
  rm -rf "$dir"
}

run_ok() { # run_ok LABEL [docker run args...]
  local label="$1" out rc=0
  shift
  out="$(timeout 120 docker run --rm --network none "$@" "$IMAGE" /bin/busybox echo ok 2>&1)" || rc=$?
  if [ "$rc" -ne 0 ] || [ "$out" != ok ]; then
    printf '%s\n' "$out" >&2
    die "container under $label did not print 'ok' (exit $rc)"
  fi
  log "container under $label printed ok"
}

stage_verify() {
  local runtimes
  runtimes="$(docker info --format '{{json .Runtimes}}')"
  grep -q '"runc"' <<<"$runtimes" || die "dockerd lists no runc runtime: $runtimes"
  grep -q '"runsc"' <<<"$runtimes" || die "dockerd lists no runsc runtime: $runtimes"
  log "runtimes: runc, runsc registered"
  if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    log "image $IMAGE present"
  else
    log "building image $IMAGE from /bin/busybox"
    build_image
  fi
  run_ok runc
  run_ok runsc --runtime runsc
}

# ---------------------------------------------------------------- venv
venv_has_deps() {
  "$VENV/bin/python" - "$CLIENT_VERSION" "$E2B_SDK_VERSION" "$OPENSHELL_VERSION" "$PROMETHEUS_CLIENT_VERSION" >/dev/null 2>&1 <<'EOF'
import sys
from importlib.metadata import version
assert version("plimsoll-client") == sys.argv[1]
version("pytest")
version("pyjwt")
assert version("e2b") == sys.argv[2]
assert version("openshell") == sys.argv[3]
assert version("prometheus-client") == sys.argv[4]
import plimsoll_client, pytest, jwt, e2b, openshell, prometheus_client
EOF
}

stage_venv() {
  if ! venv_ok; then
    [ -e "$VENV" ] && { log "removing broken venv $VENV"; rm -rf "$VENV"; }
    log "creating venv $VENV"
    mkdir -p "$(dirname "$VENV")"
    python3 -m venv "$VENV"
  fi
  if venv_has_deps; then
    log "venv already has plimsoll-client==$CLIENT_VERSION, e2b==$E2B_SDK_VERSION, openshell==$OPENSHELL_VERSION, prometheus-client==$PROMETHEUS_CLIENT_VERSION, pytest and pyjwt"
  else
    log "pip install plimsoll-client==$CLIENT_VERSION e2b==$E2B_SDK_VERSION openshell==$OPENSHELL_VERSION prometheus-client==$PROMETHEUS_CLIENT_VERSION pytest pyjwt"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
      "plimsoll-client==$CLIENT_VERSION" "e2b==$E2B_SDK_VERSION" "openshell==$OPENSHELL_VERSION" "prometheus-client==$PROMETHEUS_CLIENT_VERSION" pytest pyjwt >&2
    venv_has_deps || die "venv $VENV lacks plimsoll-client==$CLIENT_VERSION, e2b==$E2B_SDK_VERSION, openshell==$OPENSHELL_VERSION, prometheus-client==$PROMETHEUS_CLIENT_VERSION, pytest or pyjwt after install"
  fi
}

stage_sbx_venv() {
  if [ -x "$SBX_VENV/bin/python" ] && "$SBX_VENV/bin/python" -c "
from importlib.metadata import version
assert version('docker-sbx-api') == '$SBX_API_VERSION'
import sbx_facade" >/dev/null 2>&1; then
    log "venv $SBX_VENV already has docker-sbx-api==$SBX_API_VERSION"
    return
  fi
  rm -rf "$SBX_VENV"
  log "creating venv $SBX_VENV with docker-sbx-api==$SBX_API_VERSION"
  python3 -m venv "$SBX_VENV"
  "$SBX_VENV/bin/python" -m pip install -q --disable-pip-version-check "docker-sbx-api==$SBX_API_VERSION" >&2
  "$SBX_VENV/bin/python" -c "import sbx_facade" || die "venv $SBX_VENV lacks docker-sbx-api after install"
}

# ---------------------------------------------------------------- wasm
stage_wasm() { bash "$ROOT/scripts/install-wasm-toolchain.sh" >&2; }

# ---------------------------------------------------------------- tools
# The versions the scripts that use them pin (each installs its own when run
# alone); installed here so that the test command compiles only plimsoll.
pinned() { sed -n "s/^$1=\(.*\)$/\1/p" "$ROOT/$2"; }
stage_tools() {
  local cbindgen fuzz
  cbindgen="$(pinned CBINDGEN_VERSION scripts/gen-header.sh)"
  fuzz="$(pinned CARGO_FUZZ_VERSION scripts/fuzz.sh)"
  [ -n "$cbindgen" ] && [ -n "$fuzz" ] || die "cannot read the pinned cbindgen and cargo-fuzz versions"
  if cbindgen --version 2>/dev/null | grep -qx "cbindgen $cbindgen"; then
    log "cbindgen $cbindgen present"
  else
    log "cargo install cbindgen $cbindgen"
    cargo install --locked --quiet cbindgen --version "=$cbindgen" >&2
  fi
  if [ "$(cargo fuzz --version 2>/dev/null)" = "cargo-fuzz $fuzz" ]; then
    log "cargo-fuzz $fuzz present"
  else
    log "cargo install cargo-fuzz $fuzz"
    cargo install --locked --quiet cargo-fuzz --version "=$fuzz" >&2
  fi
}

# ---------------------------------------------------------------- main
T0="$(now_ms)"
stage packages stage_packages
stage config stage_config
stage dockerd stage_dockerd
stage verify stage_verify
stage venv stage_venv
stage sbx-venv stage_sbx_venv
stage wasm stage_wasm
stage tools stage_tools
T1="$(now_ms)"
log "timings:"
for t in "${TIMINGS[@]}"; do log "  $t"; done
log "  $(printf '%-9s %8ss' total "$(printf '%d.%03d' $(((T1 - T0) / 1000)) $(((T1 - T0) % 1000)))")"
log "docker server $(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'), runsc $(command -v runsc)"
log "venv: $VENV"
echo "$VENV"
