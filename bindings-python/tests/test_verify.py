"""Record and chain verification through the binding (core's verify module):
honest answers accepted, every kind of tampering rejected."""

from __future__ import annotations

import json
import pathlib

import pytest

import plimsoll
from forge import answer, deep, dumps, fingerprint, js_request


def test_a_consistent_answer_verifies() -> None:
    req = js_request()
    resp = answer(req)
    rec = plimsoll.verify_run(dumps(req), dumps(resp))
    assert rec.version == 4 and rec.isolation == "process" and rec.sequence == 0
    assert rec.record_sha256 == resp["record"]["recordSha256"]
    # bytes work as well as str
    assert plimsoll.verify_run(dumps(req).encode(), dumps(resp).encode()).record_sha256 == rec.record_sha256


@pytest.mark.parametrize(
    "tamper",
    [
        lambda q, r: r["javascript"].update(stdout="NDMK"),  # 43\n
        lambda q, r: r["javascript"].update(exitCode=1),
        lambda q, r: r["javascript"].update(timedOut=True),
        lambda q, r: r.update(isolation="container"),
        lambda q, r: r.update(sandbox="docker"),
        lambda q, r: r.update(instance="plimsoll:other"),
        lambda q, r: r.update(softwareIdentity="quickjs-ng:other"),
        lambda q, r: r.update(environment="sha256:" + "f" * 64),
        lambda q, r: r["record"].update(recordSha256="0" * 64),
        lambda q, r: r["record"].update(endedUnixMs="1700000000004"),
        lambda q, r: r["record"].update(version=3),
        lambda q, r: r["record"].update(unanswered="internal"),
        lambda q, r: r["record"].update(sequence="1"),
        lambda q, r: r.pop("record"),
        lambda q, r: r.pop("javascript"),
        lambda q, r: q["javascript"].update(code="console.log(7*6)"),
        lambda q, r: q.update(timeoutMs=5),
    ],
)
def test_tampering_is_rejected(tamper) -> None:
    req = js_request()
    resp = answer(req)
    q, r = deep(req), deep(resp)
    tamper(q, r)
    with pytest.raises(plimsoll.RecordMismatchError) as info:
        plimsoll.verify_run(dumps(q), dumps(r))
    assert info.value.code == "record_mismatch" and info.value.not_dispatched is None


def test_a_tier_below_the_floor_sent_is_an_evidence_mismatch() -> None:
    req = js_request(floor="container")
    resp = answer(req, isolation="process")  # consistent, but below the floor
    with pytest.raises(plimsoll.IsolationEvidenceMismatchError) as info:
        plimsoll.verify_run(dumps(req), dumps(resp))
    assert info.value.code == "isolation_evidence_mismatch"


def test_software_rule_binds_the_identity() -> None:
    rule = {"mode": "exact", "identities": ["quickjs-ng:forged"]}
    req = js_request(rule=rule)
    assert plimsoll.verify_run(dumps(req), dumps(answer(req, rule_id="exact:quickjs-ng:forged")))
    with pytest.raises(plimsoll.RecordMismatchError):  # the rule id is not the request's
        plimsoll.verify_run(dumps(req), dumps(answer(req)))
    other = {"mode": "exact", "identities": ["quickjs-ng:other"]}
    req2 = js_request(rule=other)
    with pytest.raises(plimsoll.RecordMismatchError):  # identity outside the rule
        plimsoll.verify_run(dumps(req2), dumps(answer(req2, rule_id="exact:quickjs-ng:other")))


def test_unreadable_json() -> None:
    with pytest.raises(plimsoll.TransportError):
        plimsoll.verify_run(dumps(js_request()), "{")
    with pytest.raises(plimsoll.TransportError):  # duplicate keys are refused
        plimsoll.verify_run(dumps(js_request()), '{"sandbox":"a","sandbox":"b"}')
    with pytest.raises(plimsoll.InvalidRequestError):
        plimsoll.verify_run("[]", "{}")
    with pytest.raises(TypeError):
        plimsoll.verify_run(1, "{}")  # type: ignore[arg-type]


def chain_of(n: int, session_id: str = "s-1"):
    fp = fingerprint(session_id)
    calls, previous = [], ""
    for i in range(1, n + 1):
        req = js_request(f"console.log({i})")
        resp = answer(req, stdout=f"{i}\n".encode(), session=fp, sequence=i, previous=previous)
        previous = resp["record"]["recordSha256"]
        calls.append((req, resp))
    return fp, calls


def test_a_chain_verifies_in_order() -> None:
    fp, calls = chain_of(3)
    chain = plimsoll.Chain(fp)
    for i, (req, resp) in enumerate(calls, start=1):
        assert chain.check_call(dumps(req), dumps(resp)).sequence == i
    assert chain.calls == 3 and chain.fingerprint == fp
    chain.check_close(fp, 3, calls[-1][1]["record"]["recordSha256"])
    with pytest.raises(plimsoll.RecordMismatchError):
        chain.check_close(fp, 2, calls[1][1]["record"]["recordSha256"])


def test_a_broken_chain_is_rejected_and_does_not_advance() -> None:
    fp, calls = chain_of(3)
    chain = plimsoll.Chain(fp)
    chain.check_call(dumps(calls[0][0]), dumps(calls[0][1]))
    with pytest.raises(plimsoll.RecordMismatchError):  # call 2 skipped
        chain.check_call(dumps(calls[2][0]), dumps(calls[2][1]))
    assert chain.calls == 1
    with pytest.raises(plimsoll.RecordMismatchError):  # a replay
        chain.check_call(dumps(calls[0][0]), dumps(calls[0][1]))
    other_fp, other = chain_of(2, "s-2")
    with pytest.raises(plimsoll.RecordMismatchError):  # another session's call
        chain.check_call(dumps(other[1][0]), dumps(other[1][1]))
    with pytest.raises(plimsoll.RecordMismatchError):  # a single run's record in a chain
        req = js_request()
        chain.check_call(dumps(req), dumps(answer(req)))
    chain.check_call(dumps(calls[1][0]), dumps(calls[1][1]))
    assert chain.calls == 2
    with pytest.raises(plimsoll.RecordMismatchError):  # a session call is not a single run
        plimsoll.verify_run(dumps(calls[0][0]), dumps(calls[0][1]))


VECTORS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "vectors" / "verify.json"


def test_shared_vectors_are_current_and_replay() -> None:
    import forge

    committed = json.loads(VECTORS.read_text())
    assert committed == json.loads(json.dumps(forge.vectors())), "regenerate tests/vectors/verify.json"
    for case in committed["single"]:
        if case["expect"] == "ok":
            plimsoll.verify_run(dumps(case["request"]), dumps(case["response"]))
        else:
            with pytest.raises(plimsoll.PlimsollError) as info:
                plimsoll.verify_run(dumps(case["request"]), dumps(case["response"]))
            assert info.value.code == case["expect"], case["name"]
    for case in committed["unreadable"]:
        with pytest.raises(plimsoll.PlimsollError) as info:
            plimsoll.verify_run(case["requestText"], case["responseText"])
        assert info.value.code == case["expect"], case["name"]
    chain = plimsoll.Chain(committed["chain"]["fingerprint"])
    for call in committed["chain"]["calls"]:
        chain.check_call(dumps(call["request"]), dumps(call["response"]))
    chain.check_close(committed["chain"]["fingerprint"], len(committed["chain"]["calls"]), committed["chain"]["last"])
