"""The wasm hello through plimsolld, driven by the published Python client.

The reference figure beside `bench_wasm` (the Rust load client): the same
snippet, the same daemon, but each request as `plimsoll-client` 0.23.0 makes
it (one connection per request, the record checked by the client). Its
baseline, measured in the same run, is the cheapest exchange with the same
daemon: `GET /healthz` over a fresh connection, so the ratio shows what a
run through the client costs beyond the connection itself.

    cargo build --release -p plimsolld
    target/venv/bin/python plimsolld/examples/bench_wasm_client.py [N]

Prints the build profile of the binary it started (PLIMSOLLD, default
target/release/plimsolld), p50/p90 per figure and runs per second.
"""

import http.client
import json
import os
import pathlib
import secrets
import subprocess
import sys
import threading
import time

import plimsoll_client

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = pathlib.Path(os.environ.get("PLIMSOLLD", ROOT / "target" / "release" / "plimsolld"))


def start(token):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SANDBOX_", "PLIMSOLL_"))}
    env.update(
        PLIMSOLL_ADDR="127.0.0.1:0",
        PLIMSOLL_LOG_FORMAT="json",
        PLIMSOLL_TOKEN=token,
        SANDBOX_PROVIDER="wasm",
        SANDBOX_RATE_PER_MIN="0",
    )
    proc = subprocess.Popen([str(BINARY)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = {}
    ready = threading.Event()

    def pump():
        for line in proc.stderr:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("message") == "listening":
                found["addr"] = ev["addr"]
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    if not ready.wait(60) or "addr" not in found:
        proc.kill()
        sys.exit("plimsolld did not start")
    return proc, found["addr"]


def figure(name, n, once):
    for _ in range(min(50, n)):
        once()
    samples = []
    t0 = time.perf_counter()
    for _ in range(n):
        s = time.perf_counter()
        once()
        samples.append(time.perf_counter() - s)
    wall = time.perf_counter() - t0
    samples.sort()
    p50, p90 = samples[len(samples) // 2], samples[len(samples) * 9 // 10]
    print(f"{name:<58} n={n:<5} p50 {p50 * 1e3:7.3f} ms  p90 {p90 * 1e3:7.3f} ms  {n / wall:8.0f} runs/s")
    return p50


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    token = "bench-" + secrets.token_hex(20)
    proc, addr = start(token)
    try:
        version = subprocess.run([str(BINARY), "--version"], capture_output=True, text=True).stdout.strip()
        profile = "release" if "/release/" in str(BINARY) else "not release (not figures)"
        print(f"{version}, build profile: {profile}, plimsoll-client {plimsoll_client.__version__}")
        host, port = addr.rsplit(":", 1)
        client = plimsoll_client.Client(f"http://{addr}", token=token)

        def hello():
            r = client.run_javascript("console.log(6*7)")
            assert r.stdout == b"42\n" and r.exit_code == 0, r

        def healthz():
            c = http.client.HTTPConnection(host, int(port))
            c.request("GET", "/healthz")
            assert c.getresponse().read() is not None
            c.close()

        floor = figure("empty exchange, GET /healthz, one connection (baseline)", n, healthz)
        run = figure("wasm hello, published client (run_javascript)", n, hello)
        print(f"ratio: the client's run is {run / floor:.1f}x the empty exchange")
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
