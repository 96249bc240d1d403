"""Fixtures: a real plimsolld for the remote client, and embedded engines.

The daemon binary comes from PLIMSOLLD (default: target/debug/plimsolld under
the repository root; build it with `cargo build -p plimsolld`). Each daemon
listens on a free loopback port, announced in its JSON "listening" log line.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import subprocess
import threading
from typing import Dict, Iterator, List, Optional

import pytest

import plimsoll

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = pathlib.Path(os.environ.get("PLIMSOLLD", ROOT / "target" / "debug" / "plimsolld"))

TOKEN_ALICE = "alice-" + "a" * 40
TOKEN_BOB = "bob-" + "b" * 40

# No rate limit, so a suite's many runs are never shed by the default 30/min.
WASM: Dict[str, str] = {"SANDBOX_PROVIDER": "wasm", "SANDBOX_RATE_PER_MIN": "0"}


class Daemon:
    """A running plimsolld: its URL, its log lines, and how to stop it."""

    def __init__(self, env: Dict[str, str]) -> None:
        if not BINARY.exists():
            raise RuntimeError(f"plimsolld not found at {BINARY}; run `cargo build -p plimsolld`")
        full = {k: v for k, v in os.environ.items() if not k.startswith(("SANDBOX_", "PLIMSOLL_"))}
        full.update({"PLIMSOLL_ADDR": "127.0.0.1:0", "PLIMSOLL_METRICS_ADDR": "off", "PLIMSOLL_LOG_FORMAT": "json"})
        full.update(env)
        self.proc = subprocess.Popen([str(BINARY)], env=full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: List[str] = []
        self.url: Optional[str] = None
        ready = threading.Event()

        def pump() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line)
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("message") == "listening":
                    self.url = "http://" + ev["addr"]
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(120) or self.url is None:
            self.stop()
            raise RuntimeError("plimsolld did not start:\n" + "".join(self.lines))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self) -> str:
        return "".join(self.lines)


@pytest.fixture
def start_daemon() -> Iterator[object]:
    started: List[Daemon] = []

    def start(**env: object) -> Daemon:
        d = Daemon({k: str(v) for k, v in env.items()})
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


@pytest.fixture(scope="session")
def wasm_daemon() -> Iterator[Daemon]:
    """One wasm daemon for the read-only remote tests."""
    d = Daemon({**WASM, "PLIMSOLL_INSECURE": "1"})
    yield d
    d.stop()


@pytest.fixture(scope="session")
def wasm_engine() -> Iterator[plimsoll.Engine]:
    """One embedded wasm engine for the read-only tests."""
    with plimsoll.Engine(WASM) as e:
        yield e


@pytest.fixture
def clients_file(tmp_path: pathlib.Path) -> str:
    entries = [
        {"id": "alice", "token_sha256": hashlib.sha256(TOKEN_ALICE.encode()).hexdigest(), "scopes": ["code:run"]},
        {"id": "bob", "token_sha256": hashlib.sha256(TOKEN_BOB.encode()).hexdigest(), "scopes": ["metrics:read"]},
    ]
    path = tmp_path / "clients.json"
    path.write_text(json.dumps({"clients": entries}))
    return str(path)
