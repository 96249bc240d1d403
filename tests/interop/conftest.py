"""Fixtures that start a real plimsolld for the published client to drive.

The daemon binary comes from PLIMSOLLD (default: target/debug/plimsolld under
the repository root). Each daemon listens on a free loopback port, announced
in its JSON "listening" log line.
"""

import hashlib
import json
import os
import pathlib
import subprocess
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = pathlib.Path(os.environ.get("PLIMSOLLD", ROOT / "target" / "debug" / "plimsolld"))

# Tokens used by the suite (test-only credentials).
TOKEN_ALICE = "alice-" + "a" * 40
TOKEN_BOB = "bob-" + "b" * 40
TOKEN_STATIC = "static-" + "s" * 40
TOKEN_CAROL = "carol-" + "c" * 40


class Daemon:
    """A running plimsolld: its URL, its log lines, and how to stop it."""

    def __init__(self, env):
        if not BINARY.exists():
            raise RuntimeError(f"plimsolld binary not found at {BINARY}; run cargo build first")
        full = {k: v for k, v in os.environ.items() if not k.startswith(("SANDBOX_", "PLIMSOLL_"))}
        full.update({"PLIMSOLL_ADDR": "127.0.0.1:0", "PLIMSOLL_METRICS_ADDR": "127.0.0.1:0", "PLIMSOLL_LOG_FORMAT": "json"})
        full.update(env)
        self.proc = subprocess.Popen([str(BINARY)], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.url = None
        self.metrics_url = None
        # Over TLS the URL names localhost, which the test certificates name.
        scheme, host = ("https", "localhost") if "PLIMSOLL_TLS_CERT" in env else ("http", None)
        ready = threading.Event()

        def url(addr):
            port = addr.rsplit(":", 1)[1]
            return f"{scheme}://{host}:{port}" if host else f"{scheme}://{addr}"

        def pump():
            for line in self.proc.stderr:
                self.lines.append(line)
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("message") == "metrics listening":
                    self.metrics_url = url(ev["addr"])
                if ev.get("message") == "listening":
                    self.url = url(ev["addr"])
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(60) or self.url is None:
            self.stop()
            raise RuntimeError("plimsolld did not start:\n" + "".join(self.lines))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def log(self):
        return "".join(self.lines)


@pytest.fixture
def start_daemon():
    started = []

    def start(**env):
        d = Daemon({k: str(v) for k, v in env.items()})
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


@pytest.fixture
def clients_file(tmp_path):
    entries = [
        {"id": "alice", "token_sha256": hashlib.sha256(TOKEN_ALICE.encode()).hexdigest(), "scopes": ["code:run"]},
        {"id": "bob", "token_sha256": hashlib.sha256(TOKEN_BOB.encode()).hexdigest(), "scopes": ["metrics:read"]},
        {"id": "carol", "token_sha256": hashlib.sha256(TOKEN_CAROL.encode()).hexdigest(), "scopes": ["code:run"]},
    ]
    path = tmp_path / "clients.json"
    path.write_text(json.dumps({"clients": entries}))
    return str(path)


# What SANDBOX_OPENSHELL_IMAGE names; the stand-in maps it to the local project image.
OPENSHELL_IMAGE = "registry.invalid/plimsoll/project:latest"


@pytest.fixture
def openshell_standin(tmp_path):
    """The OpenShell gateway stand-in (target/debug/plimsoll-standin) under
    gVisor, with a fresh CA and client bundle in a temporary directory: its
    URL and the bundle's directory."""
    certs = tmp_path / "mtls"
    proc = subprocess.Popen(
        [str(ROOT / "target" / "debug" / "plimsoll-standin"), "openshell", "--certs-dir", str(certs), "--listen", "127.0.0.1:0",
         "--runtime", "runsc", "--image", f"{OPENSHELL_IMAGE}=plimsoll/project:latest"],
        stdout=subprocess.PIPE, text=True,
    )
    url = json.loads(proc.stdout.readline())["gateway"]
    yield url.replace("127.0.0.1", "localhost"), certs
    proc.terminate()
    assert proc.wait(60) == 0


def openshell_env(url, certs):
    """plimsolld's variables for the OpenShell stand-in at `url` with the client bundle in `certs`."""
    return dict(SANDBOX_PROVIDER="openshell", SANDBOX_OPENSHELL_GATEWAY_URL=url,
                SANDBOX_OPENSHELL_CA_FILE=str(certs / "ca.crt"),
                SANDBOX_OPENSHELL_CERT_FILE=str(certs / "tls.crt"),
                SANDBOX_OPENSHELL_KEY_FILE=str(certs / "tls.key"),
                SANDBOX_OPENSHELL_IMAGE=OPENSHELL_IMAGE)


def session_flow(c, tier):
    """One session through the published client on a provider that keeps
    them: a snippet's file read by a project, a cell with files, state kept
    across cells, leftover processes (detached, setsid, double-forked) gone by
    the next call; every record at `tier`; the close summary checked by the
    client against its chain."""
    s = c.open_session(minimum_isolation="container")
    r = s.run_javascript("require('fs').writeFileSync('kept.txt', 'kept'); console.log('wrote')")
    assert (r.stdout, r.record.sequence, r.record.isolation) == (b"wrote\n", 1, tier)
    p = s.run_project({"calc.py": "print(open('kept.txt').read())"}, ["python3 calc.py"])
    assert p.steps[0].stdout == b"kept\n" and p.record.sequence == 2
    cell = s.run_cell("import json\nx = json.loads(open('in.json').read())['n']\nx + 1", "python", files={"in.json": '{"n": 41}'})
    assert (cell.stdout, cell.exit_code, cell.interpreter_started) == (b"42\n", 0, True)
    cell = s.run_cell("x * 2", "python")
    assert (cell.stdout, cell.interpreter_started) == (b"82\n", False)
    s.run_project({}, ["nohup sleep 301 >/dev/null 2>&1 &", "setsid sleep 302 >/dev/null 2>&1 < /dev/null &", "sh -c '(sleep 303 &) &'"])
    probe = (
        "const fs=require('fs');"
        "const left=fs.readdirSync('/proc').filter(p=>/^[0-9]+$/.test(p)).map(p=>{try{return fs.readFileSync('/proc/'+p+'/cmdline','utf8')}catch(e){return ''}})"
        ".filter(c=>/sleep\\x0030[123]/.test(c));console.log(left.length)"
    )
    assert s.run_javascript(probe).stdout == b"0\n"
    s.close()
