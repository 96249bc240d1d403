"""Sessions on the docker provider (runc and runsc): cells that keep state,
snippets and projects in one sandbox, every call's record chained and the
chain verified from the JSON the binding hands out, embedded and behind a real
plimsolld, synchronous and asyncio."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Dict, Iterator, List, Union

import pytest

import plimsoll

Result = Union[plimsoll.JavaScriptResult, plimsoll.CellResult, plimsoll.ProjectResult]


def sessions_env(runtime: str) -> Dict[str, str]:
    return {
        "SANDBOX_PROVIDER": "docker",
        "SANDBOX_DOCKER_RUNTIME": runtime,
        "SANDBOX_RATE_PER_MIN": "0",
        "SANDBOX_MAX_SESSIONS": "2",
    }


@pytest.fixture(scope="module", params=["runc", "runsc"])
def engine(request: pytest.FixtureRequest) -> Iterator[plimsoll.Engine]:
    with plimsoll.Engine(sessions_env(request.param)) as e:
        yield e


def verify_chain(fingerprint: str, results: List[Result], summary: plimsoll.SessionSummary) -> None:
    chain = plimsoll.Chain(fingerprint)
    for i, r in enumerate(results, start=1):
        rec = chain.check_call(r.request_json, r.response_json)
        assert rec.sequence == i and rec.session == fingerprint
    chain.check_close(summary.session, summary.calls, summary.last_record_sha256)
    assert summary.calls == len(results) and summary.ended == "closed"


def exercise(s: plimsoll.Session) -> List[Result]:
    out: List[Result] = []
    out.append(s.run_cell("python", "x = 41"))
    r = s.run_cell("python", "print(x + 1)")
    assert (r.stdout, r.exit_code) == (b"42\n", 0)
    out.append(r)
    r = s.run_cell("javascript", "let y = 6; console.log(y * 7)")
    assert r.stdout == b"42\n"
    out.append(r)
    r = s.run_cell("python", "print(open('data.txt').read())", files={"data.txt": "from a file"})
    assert r.stdout == b"from a file\n"
    out.append(r)
    j = s.run_javascript("console.log(require('fs').readFileSync('data.txt', 'utf8'))")
    assert j.stdout == b"from a file\n"
    out.append(j)
    p = s.run_project(None, ["cat data.txt", "echo more >> data.txt"])
    assert p.outcome == "completed" and p.steps[0].stdout == b"from a file"
    out.append(p)
    return out


def test_an_embedded_session_chains_every_call(engine: plimsoll.Engine) -> None:
    tier = engine.describe()["isolation"]
    with engine.open_session(minimum_isolation="container", languages=["python"]) as s:
        assert s.isolation == tier and len(s.fingerprint) == 64
        results = exercise(s)
        assert all(r.isolation == tier and r.session_end is None for r in results)
        summary = s.close()
    verify_chain(s.fingerprint, results, summary)
    with pytest.raises(plimsoll.SessionEndedError) as info:
        s.run_cell("python", "1")
    assert info.value.not_dispatched == "request" and info.value.session_end == "closed"
    with pytest.raises(plimsoll.SessionEndedError):
        s.close()


def test_a_tampered_session_record_breaks_the_chain(engine: plimsoll.Engine) -> None:
    with engine.open_session() as s:
        a = s.run_cell("python", "print('a')")
        b = s.run_cell("python", "print('b')")
    chain = plimsoll.Chain(s.fingerprint)
    tampered = json.loads(a.response_json)
    tampered["cell"]["stdout"] = "Yg=="  # "b"
    with pytest.raises(plimsoll.RecordMismatchError):
        chain.check_call(a.request_json, json.dumps(tampered))
    with pytest.raises(plimsoll.RecordMismatchError):  # out of order
        chain.check_call(b.request_json, b.response_json)
    chain.check_call(a.request_json, a.response_json)
    chain.check_call(b.request_json, b.response_json)


def test_a_cell_deadline_ends_the_interpreter_not_the_session(engine: plimsoll.Engine) -> None:
    with engine.open_session(languages=["python"]) as s:
        s.run_cell("python", "z = 1")
        r = s.run_cell("python", "while True: pass", timeout_ms=1000)
        assert (r.exit_code, r.timed_out, r.interpreter_ended) == (124, True, True)
        r = s.run_cell("python", "print('z' in globals())")
        assert r.interpreter_started and r.stdout == b"False\n"


@pytest.mark.asyncio
async def test_an_async_session() -> None:
    async with plimsoll.AsyncEngine(sessions_env("runc")) as e:
        async with await e.open_session(languages=["javascript"]) as s:
            await s.run_cell("javascript", "globalThis.n = 40")
            r = await s.run_cell("javascript", "console.log(n + 2)")
            assert r.stdout == b"42\n"
            summary = await s.close()
        assert summary.calls == 2


def test_a_remote_session(start_daemon) -> None:
    d = start_daemon(**sessions_env("runc"), PLIMSOLL_INSECURE=1)
    with plimsoll.Client(d.url) as c:
        assert c.describe()["supportsSessions"]
        with c.open_session(languages=["python"]) as s:
            assert s.isolation == "container"
            results = exercise(s)  # the core's RemoteSession checks each call's chain link
            summary = s.close()  # and the close summary against the chain it saw
        verify_chain(s.fingerprint, results, summary)
        with pytest.raises(plimsoll.SessionEndedError):
            s.run_cell("python", "1")


VECTORS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "vectors" / "sessions.json"


def session_vectors(runner: Union[plimsoll.Engine, plimsoll.Client]) -> str:
    """Sends the shared session calls (tests/vectors/sessions.json), checks
    every want, and gives the line per call the other languages must match."""
    identity = runner.describe()["sessionEnvironment"]["softwareIdentity"]
    v = json.loads(VECTORS.read_text().replace("$IDENTITY", identity))
    lines = []
    with runner.open_session(
        minimum_isolation=v["open"]["minimumIsolation"], software_rule=v["open"]["softwareRule"]
    ) as s:
        for c in v["calls"]:
            try:
                r = s.run_json(json.dumps(c["request"]))
            except plimsoll.PlimsollError as e:
                line = [c["name"], e.code, "", "", ""]
            else:
                rec = r.record
                assert rec is not None, c["name"]
                floor = json.loads(r.request_json).get("minimumIsolation", "")
                line = [c["name"], "ok", rec.request_sha256, floor, rec.software_rule_id]
            want = c["want"]
            assert line[1] == want.get("error", "ok"), (c["name"], line)
            assert line[3] == want.get("minimumIsolation", line[3]), (c["name"], line)
            assert line[4] == want.get("softwareRuleId", line[4]), (c["name"], line)
            lines.append("\t".join(line))
    return "\n".join(lines) + "\n"


def keep_vectors(link: str, text: str) -> None:
    out = os.environ.get("PLIMSOLL_SESSION_VECTORS_OUT")
    if out:
        (pathlib.Path(out) / f"python-{link}.tsv").write_text(text)


def test_the_shared_session_calls_embedded_and_remote(start_daemon) -> None:
    with plimsoll.Engine(sessions_env("runc")) as e:
        embedded = session_vectors(e)
    d = start_daemon(**sessions_env("runc"), PLIMSOLL_INSECURE=1)
    with plimsoll.Client(d.url) as c:
        remote = session_vectors(c)
    assert embedded == remote
    keep_vectors("embedded", embedded)
    keep_vectors("remote", remote)
