"""Per-caller caps and rate limits with two callers, and sessions on docker,
through plimsolld with the published client (plimsoll-client 0.23.0)."""

import concurrent.futures
import time

import plimsoll_client
import pytest
from plimsoll_client import errors

from conftest import TOKEN_ALICE, TOKEN_CAROL, session_flow

SPIN = "const t=Date.now(); while(Date.now()-t<1200){}; console.log('done')"


def burst(client, n):
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(client.run_javascript, SPIN, timeout=10) for _ in range(n)]
        return [f.exception() or f.result() for f in futures]


def test_per_caller_cap_with_two_callers(start_daemon, clients_file):
    d = start_daemon(SANDBOX_PROVIDER="wasm", PLIMSOLL_CLIENTS_FILE=clients_file, SANDBOX_MAX_CONCURRENT="8", SANDBOX_PER_KEY_CONCURRENT="2")
    alice = plimsoll_client.Client(d.url, token=TOKEN_ALICE)
    carol = plimsoll_client.Client(d.url, token=TOKEN_CAROL)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        a, c = pool.submit(burst, alice, 5), pool.submit(burst, carol, 5)
        for outcomes in (a.result(), c.result()):
            ok = [o for o in outcomes if not isinstance(o, Exception)]
            shed = [o for o in outcomes if isinstance(o, errors.AtCapacityError)]
            assert (len(ok), len(shed)) == (2, 3), outcomes
            assert all(o.not_dispatched == "capacity" for o in shed)


def test_rate_limit_with_two_callers(start_daemon, clients_file):
    d = start_daemon(SANDBOX_PROVIDER="wasm", PLIMSOLL_CLIENTS_FILE=clients_file, SANDBOX_RATE_PER_MIN="6", SANDBOX_RATE_BURST="3")
    alice = plimsoll_client.Client(d.url, token=TOKEN_ALICE)
    carol = plimsoll_client.Client(d.url, token=TOKEN_CAROL)
    outcomes = []
    for _ in range(5):
        try:
            outcomes.append(alice.run_javascript("console.log(1)").exit_code)
        except errors.AtCapacityError as e:
            assert e.not_dispatched == "capacity"
            outcomes.append("shed")
    assert outcomes == [0, 0, 0, "shed", "shed"], "a burst of three, then the bucket is empty"
    assert carol.run_javascript("console.log(1)").stdout == b"1\n", "buckets are per caller"


@pytest.mark.parametrize("runtime,tier", [("runc", "container"), ("runsc", "kernel")])
def test_docker_session_flow(start_daemon, clients_file, runtime, tier):
    d = start_daemon(
        SANDBOX_PROVIDER="docker",
        SANDBOX_DOCKER_RUNTIME=runtime,
        SANDBOX_MAX_SESSIONS="2",
        SANDBOX_RATE_PER_MIN="0",
        PLIMSOLL_CLIENTS_FILE=clients_file,
    )
    c = plimsoll_client.Client(d.url, token=TOKEN_ALICE)
    info = c.describe()
    assert info.supports_sessions and info.isolation == tier
    session_flow(c, tier)
    # A call on a session the daemon ended: typed, with its reason, nothing ran.
    short = c.open_session(lifetime=2)
    time.sleep(3)
    with pytest.raises(errors.SessionEndedError) as e:
        short.run_javascript("console.log(1)")
    assert e.value.reason == "expired" and e.value.not_dispatched == "request"
    short.close()
