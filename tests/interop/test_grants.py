"""Grants through a real plimsolld (wasm provider) and the published client:
a granted snippet calls a stdlib HTTP API on loopback through the `host`
global; the API receives a JWT, verified here with PyJWT (a library
independent of the daemon's); the snippet never sees it. And on e2b, against
the E2B stand-in binary: the granted VM reaches its broker through the
stand-in's egress proxy and plimsolld's guard listener. On openshell, against
the OpenShell gateway stand-in: a relay in the sandbox that plimsolld dials
into through the gateway's ForwardTcp; the sandbox has no way out. And on
dockercloud over Docker's Connect contract, against the Docker Cloud stand-in
binary: the guard rule set through the policy API and read back, the guest
holding its own guard credential."""

import http.server
import json
import os
import secrets
import socket
import subprocess
import threading
import urllib.error
import urllib.request

import jwt
import plimsoll_client
import pytest

from conftest import ROOT, TOKEN_ALICE, openshell_env

STANDIN = ROOT / "target" / "debug" / "plimsoll-standin"
GUARD_HOST = "guard.plimsoll.test"

JWT_SECRET = "interop-jwt-secret-" + "k" * 32


class _Api(http.server.BaseHTTPRequestHandler):
    seen = []

    def _answer(self):
        n = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(n) if n else b""
        _Api.seen.append((self.command, self.path, self.headers.get("authorization", ""), body))
        out = json.dumps({"ok": True, "target": self.path}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def api():
    _Api.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % server.server_address[1], _Api.seen
    server.shutdown()
    server.server_close()


def _static_grants(tmp_path, base):
    """A grants file whose `items` profile lets alice GET /v1/items/* with a
    static credential: its path and the credential."""
    api_token = "items-static-" + secrets.token_hex(16)
    grants = tmp_path / "grants.json"
    grants.write_text(json.dumps({"profiles": {"items": {
        "base_url": base,
        "allow": ["GET /v1/items/*"],
        "allowed_callers": ["alice"],
        "token": {"type": "static", "env": "ITEMS_TOKEN"},
    }}}))
    return grants, api_token


GRANTED_SNIPPET = """
(async () => {
  const a = await host.get('/v1/items/7');
  console.log(a.status, a.json().target);
  console.log((await host.get('/v1/admin')).status);
  console.log(Object.values(process.env).filter((v) => v.includes('items-static')).length);
})();
"""


def _granted_snippet_and_project(c, seen, api_token, tier):
    """A granted snippet and a granted project step at `tier` reach the API
    with the broker's credential, a route the grant does not allow is the
    broker's 403, the guest holds no upstream credential; without a grant
    there is no host global."""
    r = c.run_javascript(GRANTED_SNIPPET, grant_profile="items", minimum_isolation=tier)
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.exit_code == 0, out + err
    assert r.isolation == tier and r.record is not None
    assert out.splitlines() == ["200 /v1/items/7", "403", "0"], out + err
    p = c.run_project(
        {"call.js": "require('/usr/local/lib/plimsoll/host.js').get('/v1/items/p')"
                    ".then((a) => console.log(a.status))"},
        ["node call.js"], grant_profile="items", minimum_isolation=tier,
    )
    assert p.outcome == "completed", p.detail
    assert p.steps[0].stdout == b"200\n"
    assert [(m, pth, a) for m, pth, a, _ in seen] == [
        ("GET", "/v1/items/7", "Bearer " + api_token), ("GET", "/v1/items/p", "Bearer " + api_token)]
    r = c.run_javascript("console.log(typeof host)")
    assert r.stdout == b"undefined\n"


def test_granted_snippet_sends_a_verifiable_jwt(start_daemon, clients_file, api, tmp_path):
    base, seen = api
    grants = tmp_path / "grants.json"
    grants.write_text(json.dumps({"profiles": {"items": {
        "base_url": base,
        "allow": ["GET /v1/items/*", "POST /v1/items"],
        "allowed_callers": ["alice"],
        "max_calls": 5,
        "token": {"type": "jwt", "secret_env": "ITEMS_JWT", "audience": "items-api"},
    }}}))
    d = start_daemon(
        SANDBOX_PROVIDER="wasm",
        PLIMSOLL_CLIENTS_FILE=clients_file,
        PLIMSOLL_GRANTS_FILE=str(grants),
        ITEMS_JWT=JWT_SECRET,
    )
    c = plimsoll_client.Client(d.url, token=TOKEN_ALICE)
    assert c.describe().supports_javascript_grants

    code = """
const a = host.get('/v1/items/42');
console.log(a.status, a.json().target);
console.log(host.post('/v1/items', {name: 'w'}).status);
console.log(host.del('/v1/items/42').status, host.get('/v1/items/42?x=1').status, host.get('/v1/admin').status);
console.log(JSON.stringify(process.env));
"""
    r = c.run_javascript(code, grant_profile="items")
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.exit_code == 0, err
    assert out.splitlines() == ["200 /v1/items/42", "200", "403 400 403", "{}"]

    assert [(m, p) for m, p, _, _ in seen] == [("GET", "/v1/items/42"), ("POST", "/v1/items")]
    assert seen[1][3] == b'{"name":"w"}'
    for _, _, auth, _ in seen:
        assert auth.startswith("Bearer ")
        token = auth[len("Bearer "):]
        claims = jwt.decode(token, JWT_SECRET, algorithms=["HS256"], audience="items-api")
        assert claims["sub"] == "alice"
        assert token not in out and token not in err
        with pytest.raises(jwt.InvalidSignatureError):
            jwt.decode(token, "not-" + JWT_SECRET, algorithms=["HS256"], audience="items-api")

    # Without the grant there is no host global.
    r = c.run_javascript("console.log(typeof host)")
    assert r.stdout == b"undefined\n"


def _status(url, body=None, auth=None):
    req = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    if auth:
        req.add_header("authorization", auth)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Flood:
    """Keeps about `held` connections open to each of `ports` (half of them
    with a request line begun and never finished), opening new ones as the
    daemon closes the old, until stopped: what an attacker who can reach the
    listeners holds against them."""

    def __init__(self, ports, held=1000):
        self.ports, self.held, self.opened = ports, held, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        from collections import deque
        conns = deque()
        while not self.stop.is_set():
            for port in self.ports:
                try:
                    c = socket.create_connection(("127.0.0.1", port), timeout=5)
                except OSError:
                    continue
                if self.opened % 2:
                    c.sendall(b"POST /v1/e2b/guard/v1/items/1 HTTP/1.1\r\nHost: g")
                self.opened += 1
                conns.append(c)
            while len(conns) > self.held * len(self.ports):
                conns.popleft().close()
            self.stop.wait(0.005)
        for c in conns:
            c.close()

    def __enter__(self):
        # Under way only once it holds its full count.
        for _ in range(600):
            if self.opened >= self.held * len(self.ports):
                break
            self.stop.wait(0.1)
        assert self.opened >= self.held * len(self.ports), self.opened
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


def test_e2b_granted_snippet_reaches_the_api_through_the_guard(start_daemon, clients_file, api, tmp_path):
    base, seen = api
    grants, api_token = _static_grants(tmp_path, base)
    guard_port = _free_port()
    key = "e2b_" + secrets.token_hex(20)
    standin = subprocess.Popen(
        [str(STANDIN), "e2b", "--api", "127.0.0.1:0", "--envd", "127.0.0.1:0",
         "--template", "base=plimsoll/e2b:latest,cpu=1,memory=512,disk=1024",
         "--upstream", f"{GUARD_HOST}=127.0.0.1:{guard_port}"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "E2B_API_KEY": key},
    )
    try:
        addrs = json.loads(standin.stdout.readline())
        d = start_daemon(
            SANDBOX_PROVIDER="e2b", E2B_API_URL=addrs["api"], E2B_SANDBOX_URL=addrs["envd"],
            E2B_API_KEY=key, E2B_GUARD_URL=f"https://{GUARD_HOST}/v1/e2b/guard",
            PLIMSOLL_GUARD_ADDR=f"127.0.0.1:{guard_port}",
            PLIMSOLL_CLIENTS_FILE=clients_file, PLIMSOLL_GRANTS_FILE=str(grants), ITEMS_TOKEN=api_token,
        )
        c = plimsoll_client.Client(d.url, token=TOKEN_ALICE)
        info = c.describe()
        assert info.supports_javascript_grants and info.supports_project_grants
        # A flood of idle and half-sent connections on both listeners: the
        # granted VM's calls through the guard are answered all the same.
        rpc_port = int(d.url.rsplit(":", 1)[1])
        with Flood([rpc_port, guard_port]) as flood:
            _granted_snippet_and_project(c, seen, api_token, "vm")
        assert flood.opened >= 2000, flood.opened
        # The guard credential is E2B's proxy's to add: the VM holds none.
        r = c.run_javascript(
            "console.log(Object.keys(process.env).filter((k) => /crg|TOKEN|KEY/.test(k)).length)",
            grant_profile="items", minimum_isolation="vm")
        assert r.stdout == b"0\n", r.stdout + r.stderr
        # The guard listener serves the guard and nothing else.
        guard = f"http://127.0.0.1:{guard_port}"
        assert _status(guard + "/healthz") == 404
        assert _status(guard + "/metrics") == 404
        assert _status(guard + "/plimsoll.v1.SandboxService/Describe", b"{}") == 404
        assert _status(guard + "/v1/e2b/guard/v1/items/7") == 401
        assert _status(guard + "/v1/e2b/guard/v1/items/7", auth="Bearer crg_" + "0" * 64) == 401
        assert len(seen) == 2
        assert d.stop() == 0
        log = d.log()
        assert "egress guard listening" in log
        assert key not in log and api_token not in log and "crg_" not in log
    finally:
        standin.terminate()
        assert standin.wait(60) == 0


def test_openshell_granted_snippet_and_project_reach_the_api_through_the_relay(
        start_daemon, clients_file, api, tmp_path, openshell_standin):
    base, seen = api
    url, certs = openshell_standin
    grants, api_token = _static_grants(tmp_path, base)
    d = start_daemon(**openshell_env(url, certs), PLIMSOLL_CLIENTS_FILE=clients_file,
                     PLIMSOLL_GRANTS_FILE=str(grants), ITEMS_TOKEN=api_token)
    c = plimsoll_client.Client(d.url, token=TOKEN_ALICE)
    info = c.describe()
    assert info.supports_javascript_grants and info.supports_project_grants
    _granted_snippet_and_project(c, seen, api_token, "container")
    assert d.stop() == 0
    assert api_token not in d.log()


def test_dockercloud_granted_snippet_reaches_the_api_through_the_guard(start_daemon, clients_file, api, tmp_path):
    """Over Docker's Connect contract: the guard rule set through the policy
    API and read back, the guest's own guard credential, the stand-in's
    egress proxy forwarding the guard's host to plimsolld's guard listener."""
    base, seen = api
    grants, api_token = _static_grants(tmp_path, base)
    guard_port = _free_port()
    user, pat = "plimsoll-ci", "dckr_pat_" + secrets.token_hex(16)
    image = "registry.example/plimsoll/project@sha256:" + "ab" * 32
    standin = subprocess.Popen(
        [str(STANDIN), "dockercloud", "--auth", "127.0.0.1:0", "--api", "127.0.0.1:0",
         "--endpoint", "127.0.0.1:0", "--image", f"{image}=plimsoll/dockercloud:latest",
         "--upstream", f"{GUARD_HOST}=127.0.0.1:{guard_port}"],
        stdout=subprocess.PIPE, text=True,
        env={**os.environ, "DOCKER_SBX_USERNAME": user, "DOCKER_SBX_TOKEN": pat},
    )
    try:
        addrs = json.loads(standin.stdout.readline())
        d = start_daemon(
            SANDBOX_PROVIDER="dockercloud", DOCKER_SBX_USERNAME=user, DOCKER_SBX_TOKEN=pat,
            SANDBOX_DOCKERCLOUD_AUTH_URL=addrs["auth"] + "/v2/auth/token",
            SANDBOX_DOCKERCLOUD_API="connect", SANDBOX_DOCKERCLOUD_API_URL=addrs["connect"],
            SANDBOX_DOCKERCLOUD_POLICY_URL=addrs["policy"], SANDBOX_DOCKERCLOUD_IMAGE=image,
            SANDBOX_DOCKERCLOUD_GUARD_URL=f"https://{GUARD_HOST}/v1/dockercloud/guard",
            PLIMSOLL_GUARD_ADDR=f"127.0.0.1:{guard_port}",
            PLIMSOLL_CLIENTS_FILE=clients_file, PLIMSOLL_GRANTS_FILE=str(grants), ITEMS_TOKEN=api_token,
        )
        c = plimsoll_client.Client(d.url, token=TOKEN_ALICE)
        info = c.describe()
        assert (info.provider, info.isolation) == ("dockercloud", "vm")
        assert info.supports_javascript_grants and info.supports_project_grants
        _granted_snippet_and_project(c, seen, api_token, "vm")
        # An ended run's credential, or none, gets nothing from the guard.
        guard = f"http://127.0.0.1:{guard_port}"
        assert _status(guard + "/v1/dockercloud/guard/v1/items/7") == 401
        assert _status(guard + "/v1/dockercloud/guard/v1/items/7", auth="Bearer crg_" + "0" * 64) == 401
        assert len(seen) == 2
        assert d.stop() == 0
        log = d.log()
        assert pat not in log and api_token not in log and "crg_" not in log
    finally:
        standin.terminate()
        assert standin.wait(60) == 0
