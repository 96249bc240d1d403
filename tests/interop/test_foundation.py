"""The unmodified published client (plimsoll-client 0.23.0) against plimsolld:
describe(), and every pre-dispatch refusal arriving typed, bound, and marked
not dispatched."""

import plimsoll_client
import pytest
from plimsoll_client import errors
from plimsoll_client import client as client_module

from conftest import TOKEN_ALICE, TOKEN_BOB

assert plimsoll_client.__version__ == "0.23.0", plimsoll_client.__version__


def assert_refused(exc, cls, code, reason):
    assert type(exc) is cls, f"{type(exc).__name__}: {exc}"
    assert exc.code == code, exc.code
    assert exc.not_dispatched == reason, exc.not_dispatched
    assert exc.answer_not_bound is False
    assert exc.http_status is not None and exc.http_status != 200


def test_describe_disabled(start_daemon):
    d = start_daemon()
    info = plimsoll_client.Client(d.url).describe()
    assert (info.provider, info.isolation, info.protocol) == ("disabled", "none", 4)
    assert not info.supports_project and not info.supports_sessions and not info.supports_module


def test_disabled_refuses_every_payload(start_daemon):
    d = start_daemon()
    c = plimsoll_client.Client(d.url)
    with pytest.raises(errors.DisabledError) as e:
        c.run_javascript("console.log(1)")
    assert_refused(e.value, errors.DisabledError, "failed_precondition", "unsupported")
    with pytest.raises(errors.DisabledError) as e:
        c.run_project({"main.js": "console.log(1)"}, ["node main.js"])
    assert_refused(e.value, errors.DisabledError, "failed_precondition", "unsupported")


def test_bad_token_and_missing_scope(start_daemon, clients_file):
    d = start_daemon(PLIMSOLL_CLIENTS_FILE=clients_file)
    assert plimsoll_client.Client(d.url, token=TOKEN_ALICE).describe().provider == "disabled"
    for token in (None, "wrong-" + "x" * 40):
        with pytest.raises(errors.PlimsollError) as e:
            plimsoll_client.Client(d.url, token=token).run_javascript("1")
        assert_refused(e.value, errors.PlimsollError, "unauthenticated", "permission")
        assert e.value.http_status == 401
    with pytest.raises(errors.PlimsollError) as e:
        plimsoll_client.Client(d.url, token=TOKEN_BOB).describe()
    assert_refused(e.value, errors.PlimsollError, "permission_denied", "permission")
    assert e.value.http_status == 403
    assert TOKEN_ALICE not in d.log() and TOKEN_BOB not in d.log()


def test_wrong_protocol(start_daemon, monkeypatch):
    d = start_daemon()
    monkeypatch.setattr(client_module, "PROTOCOL", 5)
    with pytest.raises(errors.ProtocolMismatchError) as e:
        plimsoll_client.Client(d.url).run_javascript("1")
    assert_refused(e.value, errors.ProtocolMismatchError, "unimplemented", "protocol")


def test_floor_above_the_mark(start_daemon):
    d = start_daemon()
    for floor in ("process", "container", "kernel", "vm"):
        with pytest.raises(errors.InsufficientIsolationError) as e:
            plimsoll_client.Client(d.url).run_javascript("1", minimum_isolation=floor)
        assert_refused(e.value, errors.InsufficientIsolationError, "failed_precondition", "isolation")


def test_oversize_snippet_refused_by_the_daemon(start_daemon, monkeypatch):
    d = start_daemon()
    # The client refuses it locally first; let it through to prove the daemon refuses too.
    monkeypatch.setattr(client_module.v, "code", lambda c: c)
    with pytest.raises(errors.InvalidRequestError) as e:
        plimsoll_client.Client(d.url).run_javascript("x" * (256 * 1024 + 1))
    assert_refused(e.value, errors.InvalidRequestError, "invalid_argument", "request")


@pytest.mark.parametrize("path", ["../escape.js", "/etc/passwd", "a//b.js", "a\\b.js", "./a.js"])
def test_bad_project_path_refused_by_the_daemon(start_daemon, monkeypatch, path):
    d = start_daemon()
    monkeypatch.setattr(client_module.v, "_project_path", lambda kind, name: name)
    with pytest.raises(errors.InvalidRequestError) as e:
        plimsoll_client.Client(d.url).run_project({path: "1"}, ["true"])
    assert_refused(e.value, errors.InvalidRequestError, "invalid_argument", "request")


def test_sessions_refused_on_disabled(start_daemon):
    d = start_daemon()
    with pytest.raises(errors.DisabledError) as e:
        plimsoll_client.Client(d.url).open_session()
    assert_refused(e.value, errors.DisabledError, "failed_precondition", "unsupported")
