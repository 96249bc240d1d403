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
