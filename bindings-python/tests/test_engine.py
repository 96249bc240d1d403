"""The embedded engine on the wasm provider: real snippets, records verified,
refusals before dispatch, the GIL released while a run blocks, and Ctrl-C
cancelling the run."""

from __future__ import annotations

import _thread
import json
import signal
import threading
import time

import pytest
from plimsoll_client._record import request_digest

import plimsoll
from conftest import WASM


def test_describe_paints_the_proven_tier(wasm_engine: plimsoll.Engine) -> None:
    d = wasm_engine.describe()
    assert (d["sandbox"], d["isolation"], d["protocol"]) == ("wasm", "process", plimsoll.PROTOCOL)
    assert d["javascriptEnvironment"]["softwareIdentity"].startswith("quickjs-ng:")
    assert not d.get("supportsProject") and not d.get("supportsSessions")


def test_a_snippet_runs_and_its_record_verifies(wasm_engine: plimsoll.Engine) -> None:
    r = wasm_engine.run_javascript("console.log(6*7)")
    assert isinstance(r, plimsoll.JavaScriptResult) and r.kind == "javascript"
    assert (r.stdout, r.stderr, r.exit_code, r.timed_out) == (b"42\n", b"", 0, False)
    assert (r.sandbox, r.isolation) == ("wasm", "process")
    assert r.software_identity.startswith("quickjs-ng:") and r.environment
    rec = r.record
    assert rec is not None and rec.version == 4 and rec.isolation == "process" and rec.sequence == 0
    assert rec.started_unix_ms <= rec.ended_unix_ms
    checked = plimsoll.verify_run(r.request_json, r.response_json)
    assert checked.record_sha256 == rec.record_sha256
    # The published client computes the same request digest from the same JSON.
    assert rec.request_sha256 == request_digest(json.loads(r.request_json))
    assert plimsoll.verify_run(r.request_json, r.response_json).instance == r.instance
    # Where its time went: the same phases the answer's JSON carries.
    assert r.phases_json is not None
    phases = json.loads(r.phases_json)
    assert phases == json.loads(r.response_json)["phases"]
    names = [p["phase"] for p in phases["phases"]]
    assert names[0] == "admitted" and "running" in names
    assert all(p["ms"] >= 0 for p in phases["phases"])


def test_a_non_zero_exit_is_a_result(wasm_engine: plimsoll.Engine) -> None:
    r = wasm_engine.run_javascript("console.error('boom'); process.exit(3)")
    assert (r.exit_code, r.timed_out) == (3, False)
    assert b"boom" in r.stderr
    r = wasm_engine.run_javascript("throw new Error('thrown')")
    assert r.exit_code != 0 and b"thrown" in r.stderr
    plimsoll.verify_run(r.request_json, r.response_json)


def test_the_deadline_is_a_result(wasm_engine: plimsoll.Engine) -> None:
    t0 = time.monotonic()
    r = wasm_engine.run_javascript("while (true) {}", timeout_ms=300)
    assert (r.exit_code, r.timed_out) == (124, True)
    assert time.monotonic() - t0 < 10


def test_floor_and_software_rule(wasm_engine: plimsoll.Engine) -> None:
    assert wasm_engine.run_javascript("1", minimum_isolation="process").isolation == "process"
    for floor in ("container", "kernel", "vm"):
        with pytest.raises(plimsoll.InsufficientIsolationError) as info:
            wasm_engine.run_javascript("1", minimum_isolation=floor)
        assert info.value.not_dispatched == "isolation"
    identity = wasm_engine.describe()["javascriptEnvironment"]["softwareIdentity"]
    r = wasm_engine.run_javascript("console.log(1)", software_rule={"mode": "exact", "identities": [identity]})
    assert r.record is not None and r.record.software_rule_id == "exact:" + identity
    plimsoll.verify_run(r.request_json, r.response_json)
    with pytest.raises(plimsoll.SoftwareMismatchError) as info2:
        wasm_engine.run_javascript("1", software_rule={"mode": "exact", "identities": ["quickjs-ng:other"]})
    assert info2.value.not_dispatched == "environment"


def test_what_wasm_does_not_run(wasm_engine: plimsoll.Engine) -> None:
    with pytest.raises(plimsoll.UnsupportedError) as info:
        wasm_engine.run_project({"main.js": "console.log(1)"}, ["node main.js"])
    assert info.value.not_dispatched == "unsupported"
    with pytest.raises(plimsoll.UnsupportedError):
        wasm_engine.open_session()
    with pytest.raises(plimsoll.ConfigError) as cfg:
        plimsoll.Engine({**WASM, "SANDBOX_MAX_SESSIONS": "2"})
    assert cfg.value.variable == "SANDBOX_MAX_SESSIONS"


def test_run_json(wasm_engine: plimsoll.Engine) -> None:
    r = wasm_engine.run_json(json.dumps({"protocol": 4, "javascript": {"code": "console.log('j')"}}))
    assert isinstance(r, plimsoll.JavaScriptResult) and r.stdout == b"j\n"
    plimsoll.verify_run(r.request_json, r.response_json)


def test_rate_limit_sheds_with_capacity() -> None:
    with plimsoll.Engine({"SANDBOX_PROVIDER": "wasm", "SANDBOX_RATE_PER_MIN": "1"}) as e:
        e.run_javascript("1")
        with pytest.raises(plimsoll.AtCapacityError) as info:
            e.run_javascript("1")
        assert info.value.code == "at_capacity" and info.value.not_dispatched == "capacity"


def test_the_gil_is_released_while_a_run_blocks(wasm_engine: plimsoll.Engine) -> None:
    done = threading.Event()

    def run() -> None:
        wasm_engine.run_javascript("const t = Date.now(); while (Date.now() - t < 1500) {}", timeout_ms=10_000)
        done.set()

    threading.Thread(target=run).start()
    time.sleep(0.2)
    spins, t0 = 0, time.monotonic()
    while not done.is_set() and time.monotonic() - t0 < 0.8:
        spins += 1
    assert not done.is_set(), "the run ended before the main thread could measure"
    assert spins > 10_000, f"the main thread ran only {spins} iterations while a run blocked"
    assert done.wait(20)


def test_ctrl_c_cancels_a_blocking_run() -> None:
    # Python's own Ctrl-C handler, whatever started this process: a shell
    # without job control starts its background jobs with SIGINT ignored, and
    # then interrupt_main() does nothing.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_cancels_a_blocking_run()
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_cancels_a_blocking_run() -> None:
    # One run slot: if the interrupted run kept its slot, the next run would be shed.
    with plimsoll.Engine({**WASM, "SANDBOX_MAX_CONCURRENT": "1"}) as e:
        timer = threading.Timer(0.5, _thread.interrupt_main)
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            e.run_javascript("while (true) {}", timeout_ms=30_000)
        assert time.monotonic() - t0 < 5
        deadline = time.monotonic() + 5
        while True:
            try:
                assert e.run_javascript("console.log(2)").stdout == b"2\n"
                break
            except plimsoll.AtCapacityError:
                assert time.monotonic() < deadline, "the cancelled run kept its slot"
                time.sleep(0.05)
