"""Paid-second allowances on a metered provider (e2b, against its stand-in),
driven by the published client: a run reserves its timeout plus 33 s from
the caller's allowance (`paid_seconds_per_day` in the clients file) and the
daemon's (SANDBOX_PAID_SECONDS_PER_DAY), is charged its wall time, and one
that would pass either is shed as capacity before a sandbox is made, counted
as `paid_caller` or `paid_daemon` on /metrics."""

import hashlib
import json
import urllib.request

import plimsoll_client
import pytest
from plimsoll_client import errors

from conftest import TOKEN_ALICE, TOKEN_CAROL
from test_providers import e2b_standin  # noqa: F401  (a fixture)


def shed_counts(d):
    with urllib.request.urlopen(d.metrics_url + "/metrics", timeout=30) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("plimsoll_shed_total{"):
            reason = line.split('reason="', 1)[1].split('"', 1)[0]
            out[reason] = float(line.rsplit(" ", 1)[1])
    return out


def test_paid_allowances_shed_before_a_sandbox_is_made(start_daemon, e2b_standin, tmp_path):  # noqa: F811
    api, envd, key = e2b_standin
    clients = tmp_path / "clients.json"
    clients.write_text(json.dumps({"clients": [
        {"id": "alice", "token_sha256": hashlib.sha256(TOKEN_ALICE.encode()).hexdigest(),
         "scopes": ["code:run"], "paid_seconds_per_day": 100},
        {"id": "carol", "token_sha256": hashlib.sha256(TOKEN_CAROL.encode()).hexdigest(),
         "scopes": ["code:run"]},
    ]}))
    d = start_daemon(SANDBOX_PROVIDER="e2b", E2B_API_URL=api, E2B_SANDBOX_URL=envd, E2B_API_KEY=key,
                     PLIMSOLL_CLIENTS_FILE=str(clients), SANDBOX_PAID_SECONDS_PER_DAY="120")
    alice = plimsoll_client.Client(d.url, token=TOKEN_ALICE)
    carol = plimsoll_client.Client(d.url, token=TOKEN_CAROL)
    assert shed_counts(d) == {"at_capacity": 0, "per_key": 0, "rate": 0, "sessions_full": 0,
                              "sessions_per_caller": 0, "session_busy": 0, "paid_caller": 0, "paid_daemon": 0}
    # 10 s + 33 s reserved of alice's 100, then charged its few seconds.
    r = alice.run_javascript("console.log(6 * 7)", timeout=10)
    assert (r.exit_code, r.stdout) == (0, b"42\n")
    # 70 s + 33 s would pass alice's 100: shed at once, nothing created.
    with pytest.raises(errors.AtCapacityError) as e:
        alice.run_javascript("console.log(1)", timeout=70)
    assert "this caller's paid sandbox seconds" in str(e.value)
    assert shed_counts(d)["paid_caller"] == 1
    # Carol has no allowance of her own; the daemon's 120 s is shared:
    # 120 s (e2b's longest) + 33 s would pass it.
    with pytest.raises(errors.AtCapacityError) as e:
        carol.run_javascript("console.log(1)", timeout=120)
    assert "the daemon's paid sandbox seconds" in str(e.value)
    assert shed_counts(d)["paid_daemon"] == 1
    r = carol.run_javascript("console.log(2)", timeout=30)
    assert r.stdout == b"2\n"


def test_paid_allowances_are_for_metered_providers_only(start_daemon, tmp_path):
    with pytest.raises(RuntimeError) as e:
        start_daemon(SANDBOX_PROVIDER="wasm", SANDBOX_PAID_SECONDS_PER_DAY="100", PLIMSOLL_INSECURE="1")
    assert "SANDBOX_PAID_SECONDS_PER_DAY" in str(e.value)
    clients = tmp_path / "clients.json"
    clients.write_text(json.dumps({"clients": [
        {"id": "alice", "token_sha256": hashlib.sha256(TOKEN_ALICE.encode()).hexdigest(),
         "scopes": ["code:run"], "paid_seconds_per_day": 100}]}))
    with pytest.raises(RuntimeError) as e:
        start_daemon(SANDBOX_PROVIDER="wasm", PLIMSOLL_CLIENTS_FILE=str(clients))
    assert "paid_seconds_per_day" in str(e.value)
