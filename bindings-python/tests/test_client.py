"""The remote client against a real plimsolld on the wasm provider: every
answer verified by the core's client, refusals typed, sessions refused where
the provider keeps none."""

from __future__ import annotations

import json

import pytest
from plimsoll_client._record import request_digest

import plimsoll


def test_describe_and_run(wasm_daemon) -> None:
    with plimsoll.Client(wasm_daemon.url) as c:
        d = c.describe()
        assert (d["sandbox"], d["isolation"]) == ("wasm", "process")
        r = c.run_javascript("console.log(6*7)", minimum_isolation="process", trace_id="t-1")
        assert (r.stdout, r.exit_code, r.isolation, r.sandbox) == (b"42\n", 0, "process", "wasm")
        assert r.record is not None
        assert plimsoll.verify_run(r.request_json, r.response_json).record_sha256 == r.record.record_sha256
        assert r.record.request_sha256 == request_digest(json.loads(r.request_json))


def test_refusals_are_typed_and_marked(wasm_daemon) -> None:
    c = plimsoll.Client(wasm_daemon.url)
    with pytest.raises(plimsoll.InsufficientIsolationError) as info:
        c.run_javascript("1", minimum_isolation="container")
    assert info.value.not_dispatched == "isolation"
    with pytest.raises(plimsoll.UnsupportedError):
        c.run_project({"a.js": "1"}, ["node a.js"])
    with pytest.raises(plimsoll.UnsupportedError) as info2:
        c.open_session()
    assert info2.value.not_dispatched is not None
    with pytest.raises(plimsoll.InvalidRequestError):
        c.run_javascript("1", timeout_ms=-1)  # refused locally, before sending


def test_a_non_zero_exit_and_a_deadline_are_results(wasm_daemon) -> None:
    c = plimsoll.Client(wasm_daemon.url)
    r = c.run_javascript("process.exit(7)")
    assert r.exit_code == 7
    r = c.run_javascript("while (true) {}", timeout_ms=300)
    assert (r.exit_code, r.timed_out) == (124, True)
