"""For the same run, this binding's verifier (core's verify::check_single) and
the published plimsoll-client 0.23.0 accept the same records and reject the
same tampered ones.

One real request/response pair is captured from a real plimsolld on the wasm
provider over plain HTTP, then every field of the answer (and of the request)
is altered in turn and fed to both verifiers. The published client is asked
two ways: `plimsoll_client._record.check_single(request_digest(req), rule,
resp)` alone, and the whole answer handling it applies to every Run
(`client._finish`: check_single, the result's kind and mapping, the floor).
The binding agrees with the whole handling on every variant, and with
check_single alone on every variant but those that break a field the record
does not cover (`durationMs`): check_single never reads it, while the core
(and the published client's result mapping) refuse a malformed one."""

from __future__ import annotations

import base64
import copy
import json
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import plimsoll_client
from plimsoll_client import client as pc_client
from plimsoll_client import errors as pc_errors
from plimsoll_client._record import check_single, request_digest
from plimsoll_client._wire import Msg, loads
from plimsoll_client.types import SoftwareRule

import plimsoll

assert plimsoll_client.__version__ == "0.23.0", plimsoll_client.__version__


def capture(url: str, request: Dict[str, Any]) -> Tuple[bytes, bytes]:
    body = json.dumps(request).encode()
    req = urllib.request.Request(
        url + "/plimsoll.v1.SandboxService/Run",
        data=body,
        headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert resp.status == 200
        return body, resp.read()


def ours(req: bytes, resp: bytes) -> bool:
    try:
        plimsoll.verify_run(req, resp)
        return True
    except plimsoll.PlimsollError:
        return False


def theirs(req: bytes, resp: bytes, whole: bool = True, kind: str = "javascript") -> bool:
    """The published client's verdict: its whole answer handling, or check_single alone."""
    request = json.loads(req)
    rule_json = request.get("softwareRule")
    rule: Optional[SoftwareRule] = SoftwareRule(rule_json["mode"], tuple(rule_json["identities"])) if rule_json else None
    digest = request_digest(request)
    try:
        msg = Msg(loads(resp), "response")
        if whole:
            pc_client._finish(kind, msg, lambda: check_single(digest, rule, msg), request.get("minimumIsolation", ""))
        else:
            check_single(digest, rule, msg)
        return True
    except pc_errors.PlimsollError:
        return False


# Fields of the answer the record does not cover: check_single alone never reads them.
NOT_IN_THE_RECORD = ("durationMs",)


def paths(v: Any, prefix: Tuple[Any, ...] = ()) -> Iterator[Tuple[Any, ...]]:
    if isinstance(v, dict):
        for k, x in v.items():
            yield from paths(x, prefix + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from paths(x, prefix + (i,))
    else:
        yield prefix


def altered(v: Any) -> List[Any]:
    """Type-preserving alterations of a leaf value."""
    if isinstance(v, bool):
        return [not v]
    if isinstance(v, int):
        return [v + 1, 0]
    if isinstance(v, str):
        out = [v + "0", ""]
        try:
            raw = base64.b64decode(v, validate=True)
            out.append(base64.b64encode(raw + b"!").decode())
        except ValueError:
            pass
        if v.isdigit():
            out.append(str(int(v) + 1))
        return out
    return []


def variants(doc: Dict[str, Any]) -> Iterator[Tuple[str, Dict[str, Any]]]:
    for path in paths(doc):
        for new in altered(get(doc, path)):
            d = copy.deepcopy(doc)
            set_(d, path, new)
            yield f"set {'.'.join(map(str, path))}={new!r}", d
        d = copy.deepcopy(doc)
        delete(d, path)
        yield f"delete {'.'.join(map(str, path))}", d
    # Fields an honest answer leaves out, added.
    for path, value in [
        (("javascript", "timedOut"), True),
        (("javascript", "exitCode"), 1),
        (("javascript", "stderr"), "eA=="),
        (("record", "session"), "f" * 64),
        (("record", "sequence"), "1"),
        (("record", "previousSha256"), "a" * 64),
        (("record", "unanswered"), "internal"),
        (("record", "policy"), "p"),
        (("unknownField",), 1),
    ]:
        d = copy.deepcopy(doc)
        set_(d, path, value)
        yield f"add {'.'.join(path)}", d


def get(d: Any, path: Tuple[Any, ...]) -> Any:
    for p in path:
        d = d[p]
    return d


def set_(d: Any, path: Tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        d = d.setdefault(p, {}) if isinstance(d, dict) else d[p]
    d[path[-1]] = value


def delete(d: Any, path: Tuple[Any, ...]) -> None:
    for p in path[:-1]:
        d = d[p]
    del d[path[-1]]


def compare(req: bytes, resp: bytes, kind: str = "javascript") -> Tuple[int, int]:
    assert ours(req, resp) and theirs(req, resp, kind=kind), "both accept the honest answer"
    doc = json.loads(resp)
    accepted = rejected = 0
    disagreements: List[str] = []
    for name, d in variants(doc):
        body = json.dumps(d).encode()
        a, b = ours(req, body), theirs(req, body, kind=kind)
        if a != b:
            disagreements.append(f"{name}: binding {'accepts' if a else 'rejects'}, published {'accepts' if b else 'rejects'}")
        if a != theirs(req, body, whole=False, kind=kind) and not any(f in name for f in NOT_IN_THE_RECORD):
            disagreements.append(f"{name}: binding {'accepts' if a else 'rejects'}, published check_single does not")
        accepted += a
        rejected += not a
    request = json.loads(req)
    for name, q in variants(request):
        body = json.dumps(q).encode()
        try:
            a = ours(body, resp)
        except Exception:  # noqa: BLE001 - a request our decoder cannot read counts as a rejection
            a = False
        try:
            b = theirs(body, resp, kind=kind)
        except Exception:  # noqa: BLE001
            b = False
        if a != b:
            disagreements.append(f"request {name}: binding {'accepts' if a else 'rejects'}, published {'accepts' if b else 'rejects'}")
    assert not disagreements, "\n".join(disagreements)
    return accepted, rejected


def test_same_verdicts_on_a_captured_run(wasm_daemon) -> None:
    req, resp = capture(wasm_daemon.url, {"protocol": 4, "javascript": {"code": "console.log(6*7)"}})
    assert json.loads(resp)["javascript"]["stdout"] == base64.b64encode(b"42\n").decode()
    accepted, rejected = compare(req, resp)
    assert rejected > 40, (accepted, rejected)
    assert accepted >= 1  # durationMs and unknown fields are not covered by the record


def test_same_verdicts_with_a_floor_and_a_rule(wasm_daemon) -> None:
    identity = plimsoll.Client(wasm_daemon.url).describe()["javascriptEnvironment"]["softwareIdentity"]
    request = {
        "protocol": 4,
        "minimumIsolation": "process",
        "timeoutMs": 2000,
        "softwareRule": {"mode": "exact", "identities": [identity]},
        "javascript": {"code": "console.log('a'); console.error('b'); process.exit(2)"},
    }
    req, resp = capture(wasm_daemon.url, request)
    compare(req, resp)


def test_the_published_client_and_the_binding_accept_the_same_run(wasm_daemon) -> None:
    published = plimsoll_client.Client(wasm_daemon.url).run_javascript("console.log(6*7)")
    assert published.stdout == b"42\n"
    mine = plimsoll.Client(wasm_daemon.url).run_javascript("console.log(6*7)")
    assert mine.stdout == b"42\n"
    assert mine.record is not None and published.record is not None
    assert mine.record.request_sha256 == published.record.request_sha256
    assert mine.record.result_sha256 == published.record.result_sha256
