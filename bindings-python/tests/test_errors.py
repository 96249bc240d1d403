"""One exception class per ErrorCode, with the stable code, its number and
the not-dispatched reason; each raised for real where this machine can."""

from __future__ import annotations

import json

import pytest

import plimsoll
from conftest import TOKEN_ALICE, TOKEN_BOB, WASM

# Every code's class, as the binding names them. A code added to the core
# without a class of its own fails test_every_code_has_its_own_class.
CLASSES = {
    "invalid_request": plimsoll.InvalidRequestError,
    "protocol_missing": plimsoll.ProtocolMissingError,
    "protocol_mismatch": plimsoll.ProtocolMismatchError,
    "unauthenticated": plimsoll.UnauthenticatedError,
    "permission_denied": plimsoll.PermissionDeniedError,
    "disabled": plimsoll.DisabledError,
    "unsupported": plimsoll.UnsupportedError,
    "insufficient_isolation": plimsoll.InsufficientIsolationError,
    "software_mismatch": plimsoll.SoftwareMismatchError,
    "at_capacity": plimsoll.AtCapacityError,
    "session_ended": plimsoll.SessionEndedError,
    "infrastructure": plimsoll.InfrastructureError,
    "cancelled": plimsoll.RunCancelledError,
    "deadline_exceeded": plimsoll.DeadlineExceededError,
    "record_mismatch": plimsoll.RecordMismatchError,
    "isolation_evidence_mismatch": plimsoll.IsolationEvidenceMismatchError,
    "transport": plimsoll.TransportError,
}

# The reason a refusal with each code carries (None: the call may have run).
REASONS = {
    "invalid_request": "request",
    "protocol_missing": "protocol",
    "protocol_mismatch": "protocol",
    "unauthenticated": "permission",
    "permission_denied": "permission",
    "disabled": "unsupported",
    "unsupported": "unsupported",
    "insufficient_isolation": "isolation",
    "software_mismatch": "environment",
    "at_capacity": "capacity",
    "session_ended": "request",
    "infrastructure": None,
    "cancelled": None,
    "deadline_exceeded": None,
    "record_mismatch": None,
    "isolation_evidence_mismatch": None,
    "transport": None,
}


def assert_error(exc: BaseException, code: str) -> None:
    assert isinstance(exc, plimsoll.PlimsollError), repr(exc)
    assert type(exc) is CLASSES[code], f"{type(exc).__name__}: {exc}"
    assert exc.code == code
    assert exc.code_number == dict(plimsoll.error_codes())[code]
    assert exc.message and str(exc) == exc.message


def test_every_code_has_its_own_class() -> None:
    codes = plimsoll.error_codes()
    assert [n for _, n in codes] == list(range(1, len(codes) + 1))
    assert {name for name, _ in codes} == set(CLASSES)
    assert len(set(CLASSES.values())) == len(CLASSES)
    for name, number in codes:
        cls = CLASSES[name]
        assert issubclass(cls, plimsoll.PlimsollError) and cls is not plimsoll.PlimsollError
        assert cls.__module__ == "plimsoll" and getattr(plimsoll, cls.__name__) is cls
        exc = plimsoll._native.error_for_code(name, "m")
        assert type(exc) is cls
        assert (exc.code, exc.code_number, exc.not_dispatched) == (name, number, REASONS[name])
        assert exc.session_end is None and exc.unanswered is None


def test_idiomatic_builtin_bases() -> None:
    assert issubclass(plimsoll.InvalidRequestError, ValueError)
    assert issubclass(plimsoll.DeadlineExceededError, TimeoutError)
    assert issubclass(plimsoll.ConfigError, ValueError)
    assert not issubclass(plimsoll.ConfigError, plimsoll.PlimsollError)
    with pytest.raises(TimeoutError):
        raise plimsoll._native.error_for_code("deadline_exceeded", "late")


def test_disabled_refuses_every_run() -> None:
    e = plimsoll.Engine()
    assert e.describe()["isolation"] == "none"
    for run in (lambda: e.run_javascript("console.log(1)"), lambda: e.run_project({"a.js": "1"}, ["node a.js"])):
        with pytest.raises(plimsoll.DisabledError) as info:
            run()
        assert_error(info.value, "disabled")
        assert info.value.not_dispatched == "unsupported"
    with pytest.raises(plimsoll.PlimsollError) as info:
        e.open_session()
    assert info.value.not_dispatched is not None


def test_invalid_and_protocol_refusals() -> None:
    e = plimsoll.Engine()
    with pytest.raises(ValueError) as info:
        e.run_javascript("1", minimum_isolation="none")
    assert_error(info.value, "invalid_request")
    assert info.value.not_dispatched == "request"
    with pytest.raises(plimsoll.InvalidRequestError):
        e.run_javascript("x" * (256 * 1024 + 1))
    with pytest.raises(plimsoll.InvalidRequestError):
        e.run_json("{not json")
    with pytest.raises(plimsoll.ProtocolMissingError) as info:
        e.run_json(json.dumps({"javascript": {"code": "1"}}))
    assert_error(info.value, "protocol_missing")
    assert info.value.not_dispatched == "protocol"
    with pytest.raises(plimsoll.ProtocolMismatchError) as info:
        e.run_json(json.dumps({"protocol": plimsoll.PROTOCOL + 1, "javascript": {"code": "1"}}))
    assert_error(info.value, "protocol_mismatch")


def test_config_errors_name_the_variable() -> None:
    with pytest.raises(plimsoll.ConfigError) as info:
        plimsoll.Engine({"SANDBOX_PROVIDER": "magic"})
    assert info.value.variable == "SANDBOX_PROVIDER"
    with pytest.raises(plimsoll.ConfigError) as info:
        plimsoll.Engine({"SANDBOX_PROVDER": "wasm"})
    assert "SANDBOX_PROVDER" in str(info.value)
    with pytest.raises(plimsoll.ConfigError) as info:
        plimsoll.Engine({"PLIMSOLL_ADDR": "127.0.0.1:0"})
    assert "PLIMSOLL_ADDR" in str(info.value)
    with pytest.raises(plimsoll.ConfigError) as info:
        plimsoll.Engine({"SANDBOX_MIN_ISOLATION": "process"})
    assert info.value.variable == "SANDBOX_MIN_ISOLATION"


def test_remote_refusals(start_daemon, clients_file) -> None:
    d = start_daemon(PLIMSOLL_CLIENTS_FILE=clients_file)
    assert plimsoll.Client(d.url, token=TOKEN_ALICE).describe()["sandbox"] == "disabled"
    for token in (None, "wrong-" + "x" * 40):
        with pytest.raises(plimsoll.UnauthenticatedError) as info:
            plimsoll.Client(d.url, token=token).run_javascript("1")
        assert_error(info.value, "unauthenticated")
        assert info.value.not_dispatched == "permission"
    with pytest.raises(plimsoll.PermissionDeniedError) as info:
        plimsoll.Client(d.url, token=TOKEN_BOB).describe()
    assert_error(info.value, "permission_denied")
    with pytest.raises(plimsoll.DisabledError) as info:
        plimsoll.Client(d.url, token=TOKEN_ALICE).run_javascript("1")
    assert_error(info.value, "disabled")
    assert info.value.not_dispatched == "unsupported"
    with pytest.raises(plimsoll.InsufficientIsolationError) as info:
        plimsoll.Client(d.url, token=TOKEN_ALICE).run_javascript("1", minimum_isolation="vm")
    assert_error(info.value, "insufficient_isolation")
    assert TOKEN_ALICE not in d.log() and TOKEN_BOB not in d.log()


def test_client_options_are_checked() -> None:
    with pytest.raises(plimsoll.InvalidRequestError):
        plimsoll.Client("http://example.com")  # cleartext off loopback
    plimsoll.Client("http://example.com", insecure_http=True)
    with pytest.raises(plimsoll.InvalidRequestError):
        plimsoll.Client("https://u:p@example.com")
    with pytest.raises(plimsoll.InvalidRequestError):
        plimsoll.Client("http://127.0.0.1:1", token="has space")
    with pytest.raises(plimsoll.InvalidRequestError):
        plimsoll.Client("http://127.0.0.1:1", timeout=0)


def test_transport_error_when_nothing_answers() -> None:
    with pytest.raises(plimsoll.TransportError) as info:
        plimsoll.Client("http://127.0.0.1:9", timeout=5).run_javascript("1")
    assert_error(info.value, "transport")
    assert info.value.not_dispatched is None
