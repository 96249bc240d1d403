#!/usr/bin/env python3
"""Runs the workspace's test binaries in parallel lanes, then its doc tests.

    python3 scripts/test-lanes.py [CARGO TEST ARGS...]

`cargo test` runs one test binary after another, and most of plimsoll's time
in them is spent waiting on docker (container starts, gVisor boots, private
dockerd instances), not on the CPU. This builds what `cargo test ARGS` would
build (`--no-run`), then runs the binaries PLIMSOLL_TEST_LANES at a time
(2 by default; 1 is `cargo test`'s order), the longest first so the lanes end
together, each from its package's directory as cargo runs it. A binary's
output is printed whole when it ends, so two never interleave; every binary
runs whatever another's result (as --no-fail-fast), and the exit status is
non-zero if any failed. The suites that share a host resource keep apart on
their own: their containers carry their own instance labels, the hostile
corpus its own guest uids, the fault suite its own dockerd.
"""

import json
import os
import subprocess
import sys
import threading
import time

# Seconds each binary took in a local run (2 cores, 2026-12-06), by package
# directory and target; only the order matters. A binary not named here is short and goes last.
EXPECTED = {
    ("plimsolld", "hostile"): 283,
    ("plimsolld", "faults"): 254,
    ("plimsoll-core", "docker"): 166,
    ("plimsoll-core", "conformance"): 83,
    ("plimsoll-core", "docker_sessions"): 55,
    ("plimsoll-core", "parity"): 52,
    ("plimsoll-core", "dockercloud"): 40,
    ("plimsoll-core", "openshell"): 34,
    ("plimsoll-core", "grants"): 24,
    ("plimsolld", "daemon"): 19,
    ("plimsolld", "impostor"): 17,
    ("plimsoll-core", "wasm"): 14,
    ("plimsoll-core", "e2b"): 13,
    ("plimsoll-core", "guard"): 10,
}


def binaries(args):
    """The test executables `cargo test ARGS` runs: (package directory's name,
    target name, executable, package directory)."""
    build = subprocess.run(
        ["cargo", "test", "--no-run", "--message-format=json-render-diagnostics", *args],
        stdout=subprocess.PIPE,
        check=False,
    )
    if build.returncode != 0:
        sys.exit(build.returncode)
    found = []
    for line in build.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg["profile"]["test"]:
            continue
        package_dir = os.path.dirname(msg["manifest_path"])
        found.append(
            (os.path.basename(package_dir), msg["target"]["name"], msg["executable"], package_dir)
        )
    return found


def main():
    args = sys.argv[1:]
    lanes = max(1, int(os.environ.get("PLIMSOLL_TEST_LANES", "2")))
    queue = sorted(binaries(args), key=lambda b: -EXPECTED.get((b[0], b[1]), 0))
    lock = threading.Lock()
    results = []

    def lane():
        while True:
            with lock:
                if not queue:
                    return
                package, name, exe, cwd = queue.pop(0)
                print(f"== {package} {name}: started", flush=True)
            t0 = time.monotonic()
            run = subprocess.run(
                [exe], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False
            )
            took = time.monotonic() - t0
            verdict = "ok" if run.returncode == 0 else f"FAILED (exit {run.returncode})"
            with lock:
                print(f"\n     Running {package} {name} ({os.path.relpath(exe)})", flush=True)
                sys.stdout.buffer.write(run.stdout)
                print(f"== {package} {name}: {verdict} in {took:.1f} s", flush=True)
                results.append((took, package, name, run.returncode))

    t0 = time.monotonic()
    threads = [threading.Thread(target=lane) for _ in range(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"\n== test binaries: {len(results)} in {time.monotonic() - t0:.0f} s on {lanes} lanes")
    for took, package, name, code in sorted(results, reverse=True):
        print(f"  {took:7.1f} s  {package} {name}{'' if code == 0 else '  FAILED'}")
    failed = [f"{p} {n}" for _, p, n, code in results if code != 0]
    doc = subprocess.run(["cargo", "test", "--doc", *args], check=False)
    if doc.returncode != 0:
        failed.append("doc tests")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
