"""Grants through a real plimsolld (wasm provider) and the published client:
a granted snippet calls a stdlib HTTP API on loopback through the `host`
global; the API receives a JWT, verified here with PyJWT (a library
independent of the daemon's); the snippet never sees it."""

import http.server
import json
import threading

import jwt
import plimsoll_client
import pytest

from conftest import TOKEN_ALICE

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


def test_granted_snippet_sends_a_verifiable_jwt(start_daemon, clients_file, api, tmp_path):
    base, seen = api
    grants = tmp_path / "grants.json"
    grants.write_text(json.dumps({"profiles": {"items": {
        "base_url": base,
        "allow": ["GET /v1/items/*", "POST /v1/items"],
        "allowed_callers": ["alice"],
        "max_calls": 3,
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
