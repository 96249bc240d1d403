"""Type-checked usage of the public API (CI runs `mypy --strict` on this file
against the committed stubs). Never executed: only checked."""

from __future__ import annotations

import asyncio

import plimsoll
from plimsoll import SoftwareRule


def sync_usage() -> int:
    rule: SoftwareRule = {"mode": "exact", "identities": ["quickjs-ng:x"]}
    with plimsoll.Engine({"SANDBOX_PROVIDER": "wasm"}) as engine:
        info = engine.describe()
        assert isinstance(info["isolation"], str)
        r = engine.run_javascript("console.log(6*7)", minimum_isolation="process", timeout_ms=1000, software_rule=rule)
        out: bytes = r.stdout
        code: int = r.exit_code
        rec = r.record
        if rec is not None:
            digest: str = rec.record_sha256
            seq: int = rec.sequence
            assert digest and seq >= 0
        checked: plimsoll.Record = plimsoll.verify_run(r.request_json, r.response_json)
        assert checked.version == 4 and out
        p = engine.run_project({"main.js": "console.log(1)"}, ["node main.js"], artifacts=["out.txt"])
        for step in p.steps:
            assert step.exit_code >= 0 and isinstance(step.stdout, bytes)
        for path, content in p.artifacts:
            assert path and isinstance(content, bytes)
        any_kind: plimsoll.RunResult = engine.run_json('{"protocol":4,"javascript":{"code":"1"}}')
        assert any_kind.kind
    client = plimsoll.Client("http://127.0.0.1:8746", token=None, insecure_http=False, timeout=30.0)
    with client.open_session(languages=["python"]) as s:
        c = s.run_cell("python", "1+1", files={"a.txt": "x"})
        assert c.interpreter_started or c.exit_code == 0
        summary: plimsoll.SessionSummary = s.close()
        chain = plimsoll.Chain(s.fingerprint)
        chain.check_close(summary.session, summary.calls, summary.last_record_sha256)
    try:
        client.run_javascript("1")
    except plimsoll.InvalidRequestError as e:
        reason: str | None = e.not_dispatched
        return e.code_number + len(reason or "")
    except plimsoll.PlimsollError as e:
        name: str = e.code
        return len(name)
    return code


async def async_usage() -> bytes:
    async with plimsoll.AsyncEngine({"SANDBOX_PROVIDER": "wasm"}) as engine:
        r = await asyncio.wait_for(engine.run_javascript("console.log(1)"), 5)
        async with await engine.open_session() as s:
            j = await s.run_javascript("1")
            summary = await s.close()
            assert summary.calls >= 0 and j.exit_code >= 0
        started: plimsoll.AsyncEngine = await plimsoll.AsyncEngine.start({"SANDBOX_PROVIDER": "wasm"})
        await started.close()
        return r.stdout
    raise AssertionError("unreachable")


async def async_client() -> str:
    async with plimsoll.AsyncClient("http://127.0.0.1:8746") as c:
        d = await c.describe()
        return str(d.get("sandbox"))
    raise AssertionError("unreachable")
