"""plimsoll's host API client for Python, baked into the project image.

In a run that carries a grant, every call goes to the run's broker, which
holds the credential and allows only the grant's routes. The guest never sees
the credential. Two ways there: on docker, a Unix socket the daemon mounts at
$HOST_API_SOCKET; in a VM that runs elsewhere (e2b, Docker Cloud),
$HOST_API_URL, https://<guard host><guard path>, the only host the VM may
reach (on e2b the vendor's egress proxy adds the run's guard credential
outside the VM; on Docker Cloud the guest holds its own, $HOST_API_TOKEN,
which reaches only this run's broker; the OS trust bundle holds the CA).

    import plimsoll_host
    a = plimsoll_host.get('/v1/items/1')   # Answer(status, body, content_type); a.json()
"""

import http.client
import json
import os
import socket
import ssl
import urllib.parse

# The OS trust bundle (E2B puts its egress proxy's CA there).
_OS_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"

__all__ = ["Answer", "call", "get", "post", "put", "patch", "delete", "del_"]


class Answer:
    """One answer: the HTTP status, the body (str) and its media type."""

    def __init__(self, status, body, content_type):
        self.status = status
        self.body = body
        self.content_type = content_type

    @property
    def ok(self):
        return 200 <= self.status < 300

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "Answer(status=%r, body=%r)" % (self.status, self.body[:80])


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


def call(method, path, body=None, timeout=120):
    """Makes one brokered call. A str or bytes body is sent as is; anything
    else is sent as JSON."""
    sock = os.environ.get("HOST_API_SOCKET")
    base = os.environ.get("HOST_API_URL")
    if not sock and not base:
        raise RuntimeError(
            "plimsoll_host: this run carries no grant (neither HOST_API_SOCKET nor HOST_API_URL is set)"
        )
    if not path.startswith("/"):
        raise ValueError("plimsoll_host: the path must start with /")
    headers = {}
    payload = None
    if body is not None:
        if isinstance(body, str):
            payload = body.encode()
        elif isinstance(body, (bytes, bytearray)):
            payload = bytes(body)
        else:
            payload = json.dumps(body).encode()
            headers["content-type"] = "application/json"
    if sock:
        conn = _UnixConnection(sock, timeout)
    else:
        u = urllib.parse.urlsplit(base)
        cafile = os.environ.get("NODE_EXTRA_CA_CERTS") or (
            _OS_BUNDLE if os.path.exists(_OS_BUNDLE) else None
        )
        ctx = ssl.create_default_context(cafile=cafile)
        conn = http.client.HTTPSConnection(u.hostname, u.port or 443, timeout=timeout, context=ctx)
        path = u.path.rstrip("/") + path
        token = os.environ.get("HOST_API_TOKEN")
        if token:
            headers["authorization"] = "Bearer " + token
    try:
        conn.request(method.upper(), path, body=payload, headers=headers)
        r = conn.getresponse()
        data = r.read().decode("utf-8", "replace")
        return Answer(r.status, data, r.getheader("content-type", ""))
    finally:
        conn.close()


def get(path):
    return call("GET", path)


def post(path, body=None):
    return call("POST", path, body)


def put(path, body=None):
    return call("PUT", path, body)


def patch(path, body=None):
    return call("PATCH", path, body)


def delete(path):
    return call("DELETE", path)


del_ = delete
