"""Self-consistent answers made with the published client's digest functions
(plimsoll-client 0.23.0), so the binding's checks can be driven through cases
no honest daemon produces: a tier below the floor sent, a session chain
reordered. Test-only: it signs nothing and proves nothing by itself."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any, Dict, Optional

from plimsoll_client._record import record_digest, request_digest, result_digest, session_fingerprint
from plimsoll_client._wire import Msg
from plimsoll_client.types import RunRecord

INSTANCE = "plimsoll:forged"


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def js_request(code: str = "console.log(6*7)", floor: str = "", rule: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    req: Dict[str, Any] = {"protocol": 4, "javascript": {"code": code}}
    if floor:
        req["minimumIsolation"] = floor
    if rule:
        req["softwareRule"] = rule
    return req


def answer(
    req: Dict[str, Any],
    *,
    isolation: str = "process",
    stdout: bytes = b"42\n",
    identity: str = "quickjs-ng:forged",
    rule_id: str = "",
    session: str = "",
    sequence: int = 0,
    previous: str = "",
) -> Dict[str, Any]:
    """A response to `req` whose record digests are all correct."""
    resp: Dict[str, Any] = {
        "sandbox": "wasm",
        "isolation": isolation,
        "durationMs": "3",
        "environment": "sha256:" + "e" * 64,
        "softwareIdentity": identity,
        "instance": INSTANCE,
        "javascript": {"stdout": b64(stdout)},
    }
    fields = dict(
        version=4,
        request_sha256=request_digest(req),
        result_sha256=result_digest(Msg(resp, "response")),
        provider="wasm",
        isolation=isolation,
        environment=resp["environment"],
        policy="",
        software_identity=identity,
        software_rule_id=rule_id,
        started_unix_ms=1_700_000_000_000,
        ended_unix_ms=1_700_000_000_003,
        session=session,
        sequence=sequence,
        previous_sha256=previous,
        sha256="",
        unanswered="",
        instance=INSTANCE,
    )
    digest = record_digest(RunRecord(**fields))  # type: ignore[arg-type]
    record = {
        "version": 4,
        "requestSha256": fields["request_sha256"],
        "resultSha256": fields["result_sha256"],
        "provider": "wasm",
        "isolation": isolation,
        "environment": resp["environment"],
        "startedUnixMs": str(fields["started_unix_ms"]),
        "endedUnixMs": str(fields["ended_unix_ms"]),
        "softwareIdentity": identity,
        "instance": INSTANCE,
        "recordSha256": digest,
    }
    if rule_id:
        record["softwareRuleId"] = rule_id
    if session:
        record.update(session=session, sequence=str(sequence), previousSha256=previous)
        if not previous:
            del record["previousSha256"]
    resp["record"] = record
    return resp


def dumps(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"))


def fingerprint(session_id: str) -> str:
    return session_fingerprint(session_id)


def deep(v: Any) -> Any:
    return copy.deepcopy(v)


def vectors() -> Dict[str, Any]:
    """The shared verification vectors (tests/vectors/verify.json): single runs
    that must verify or fail with a named code, and a session chain. Both
    binding suites replay them."""
    singles = []
    req = js_request()
    good = answer(req)
    singles.append({"name": "consistent", "request": req, "response": good, "expect": "ok"})
    t = deep(good)
    t["javascript"]["stdout"] = b64(b"43\n")
    singles.append({"name": "stdout changed", "request": req, "response": t, "expect": "record_mismatch"})
    t = deep(good)
    t["isolation"] = "container"
    singles.append({"name": "evidence tier changed", "request": req, "response": t, "expect": "record_mismatch"})
    t = deep(good)
    t["record"]["recordSha256"] = "0" * 64
    singles.append({"name": "record digest changed", "request": req, "response": t, "expect": "record_mismatch"})
    t = deep(good)
    del t["record"]
    singles.append({"name": "no record", "request": req, "response": t, "expect": "record_mismatch"})
    other = js_request("console.log(7*6)")
    singles.append({"name": "another request", "request": other, "response": good, "expect": "record_mismatch"})
    floor = js_request(floor="container")
    singles.append({"name": "tier below the floor sent", "request": floor, "response": answer(floor), "expect": "isolation_evidence_mismatch"})
    rule = {"mode": "exact", "identities": ["quickjs-ng:forged"]}
    ruled = js_request(rule=rule)
    singles.append({"name": "software rule", "request": ruled, "response": answer(ruled, rule_id="exact:quickjs-ng:forged"), "expect": "ok"})
    singles.append({"name": "software rule id missing", "request": ruled, "response": answer(ruled), "expect": "record_mismatch"})
    fp = fingerprint("session-1")
    calls, previous = [], ""
    for i in range(1, 4):
        creq = js_request(f"console.log({i})")
        cresp = answer(creq, stdout=f"{i}\n".encode(), session=fp, sequence=i, previous=previous)
        previous = cresp["record"]["recordSha256"]
        calls.append({"request": creq, "response": cresp})
    # Kept bytes that do not parse: an answer that does not parse is malformed,
    # a transport error (the published client's MalformedResponseError); a
    # request that does not parse is an invalid request. The same in every language.
    unreadable = [
        {"name": "answer not an object", "requestText": dumps(req), "responseText": "[]", "expect": "transport"},
        {"name": "answer cut short", "requestText": dumps(req), "responseText": dumps(good)[:40], "expect": "transport"},
        {"name": "answer field of the wrong type", "requestText": dumps(req), "responseText": '{"durationMs":{}}', "expect": "transport"},
        {"name": "request not an object", "requestText": "[]", "responseText": dumps(good), "expect": "invalid_request"},
    ]
    return {
        "comment": "Generated by bindings-python/tests/forge.py (python forge.py > ../../tests/vectors/verify.json) "
        "with plimsoll-client 0.23.0's digest functions. Replayed by the Python, Node, C and Go suites.",
        "single": singles,
        "unreadable": unreadable,
        "chain": {"fingerprint": fp, "calls": calls, "last": previous},
    }


if __name__ == "__main__":
    print(json.dumps(vectors(), indent=1, sort_keys=True))
