"""The published client (plimsoll-client 0.23.0) against plimsolld on the real
providers: wasm (tier process), docker on runc (container) and on runsc (kernel),
and the hosted providers against their stand-ins: e2b and dockercloud (vm),
openshell (container).
Every answer's record is verified by the client itself; a floor above the mark
is refused before anything runs."""

import json
import os
import secrets
import subprocess
import time

import plimsoll_client
import pytest
from plimsoll_client import errors

from conftest import ROOT, TOKEN_ALICE, openshell_env, session_flow


def client(d):
    return plimsoll_client.Client(d.url, token=TOKEN_ALICE)


def check_record(r, tier):
    assert r.isolation == tier
    assert r.record is not None and r.record.version == 4
    assert r.record.isolation == tier and r.record.ended_unix_ms >= r.record.started_unix_ms
    assert len(r.record.sha256) == 64


def test_wasm_runs_and_paints_process(start_daemon, clients_file):
    d = start_daemon(SANDBOX_PROVIDER="wasm", PLIMSOLL_CLIENTS_FILE=clients_file)
    c = client(d)
    info = c.describe()
    assert (info.provider, info.isolation) == ("wasm", "process")
    assert not info.supports_project
    r = c.run_javascript("console.log(6*7)", minimum_isolation="process")
    assert (r.stdout, r.exit_code, r.timed_out) == (b"42\n", 0, False)
    check_record(r, "process")
    assert r.software_identity.startswith("quickjs-ng:")
    # A non-zero exit is a result, not an error.
    r = c.run_javascript("console.error('bad'); process.exit(3)")
    assert (r.exit_code, r.stderr) == (3, b"bad\n")
    # The deadline is a result too: exit 124, timed_out.
    r = c.run_javascript("for(;;){}", timeout=0.5)
    assert (r.exit_code, r.timed_out) == (124, True)
    with pytest.raises(errors.InsufficientIsolationError) as e:
        c.run_javascript("console.log(1)", minimum_isolation="container")
    assert e.value.not_dispatched == "isolation"
    with pytest.raises(errors.UnsupportedError) as e:
        c.run_project({"main.js": "console.log(1)"}, ["node main.js"])
    assert e.value.not_dispatched == "unsupported"
    # A software rule naming the daemon's own identity passes; another is refused.
    ok = c.run_javascript("console.log(1)", software=plimsoll_client.SoftwareRule.exact(r.software_identity))
    assert ok.record.software_rule_id == "exact:" + r.software_identity
    with pytest.raises(errors.SoftwareMismatchError) as e:
        c.run_javascript("console.log(1)", software=plimsoll_client.SoftwareRule.exact("quickjs-ng:0.0.0"))
    assert e.value.not_dispatched == "environment"


def test_wasm_admission_sheds_the_seeds_example(start_daemon, clients_file):
    import concurrent.futures

    for env, admitted in (({"SANDBOX_TOTAL_MEMORY_MB": "1024", "SANDBOX_MEMORY_MB": "256"}, 4), ({}, 8)):
        d = start_daemon(
            SANDBOX_PROVIDER="wasm",
            PLIMSOLL_CLIENTS_FILE=clients_file,
            SANDBOX_MAX_CONCURRENT="8",
            SANDBOX_PER_KEY_CONCURRENT="8",
            **env,
        )
        c = client(d)
        spin = "const t=Date.now(); while(Date.now()-t<1500){}; console.log('done')"
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            futures = [pool.submit(c.run_javascript, spin, timeout=10) for _ in range(12)]
            outcomes = [f.exception() or f.result() for f in futures]
        ok = [o for o in outcomes if not isinstance(o, Exception)]
        shed = [o for o in outcomes if isinstance(o, errors.AtCapacityError)]
        assert (len(ok), len(shed)) == (admitted, 12 - admitted), outcomes
        assert all(o.not_dispatched == "capacity" for o in shed)
        assert all(r.stdout == b"done\n" for r in ok)
        d.stop()


@pytest.mark.parametrize("runtime,tier", [("runc", "container"), ("runsc", "kernel")])
def test_docker_runs_snippets_and_projects(start_daemon, clients_file, runtime, tier):
    d = start_daemon(SANDBOX_PROVIDER="docker", SANDBOX_DOCKER_RUNTIME=runtime, PLIMSOLL_CLIENTS_FILE=clients_file)
    c = client(d)
    info = c.describe()
    assert (info.provider, info.isolation, info.supports_project) == ("docker", tier, True)
    assert set(info.project_environment.languages) >= {"javascript", "python"}
    r = c.run_javascript("console.log(6*7)", minimum_isolation="container")
    assert (r.stdout, r.exit_code) == (b"42\n", 0)
    check_record(r, tier)
    # Software rules match the image identity as they did before the wall was
    # named: the wall's identity is in the record's policy, not in the software.
    ok = c.run_javascript(
        "console.log(1)", minimum_isolation="container", software=plimsoll_client.SoftwareRule.exact(r.software_identity)
    )
    assert r.software_identity.startswith("docker-image:sha256:"), r.software_identity
    assert ok.record.software_rule_id == "exact:" + r.software_identity
    assert ";wall=sha256:" in ok.record.policy
    p = c.run_project(
        {"main.js": "console.log(require('./lib.js'))", "lib.js": "module.exports = 42", "calc.py": "print(6*7)"},
        ["node main.js > out.txt", "python3 calc.py", "cat out.txt"],
        artifacts=["out.txt"],
        minimum_isolation="container",
    )
    assert p.outcome == "completed", p.detail
    assert [s.exit_code for s in p.steps] == [0, 0, 0]
    assert p.steps[1].stdout == b"42\n" and p.steps[2].stdout == b"42\n"
    assert [(a.path, a.content) for a in p.artifacts] == [("out.txt", b"42\n")]
    check_record(p, tier)
    # Stop at the first failure; the failing step's exit code is a result.
    p = c.run_project({"a.py": "import sys; sys.exit(5)"}, ["python3 a.py", "echo never"])
    assert [s.exit_code for s in p.steps] == [5] and p.outcome == "completed"
    with pytest.raises(errors.InsufficientIsolationError) as e:
        c.run_javascript("console.log(1)", minimum_isolation="vm")
    assert e.value.not_dispatched == "isolation"


def test_docker_snippet_pool_answers_verify_and_say_so(start_daemon, clients_file):
    """Snippets from the snippet pool (SANDBOX_SNIPPET_POOL): the client
    verifies each record, whose policy says the run came from the pool."""
    d = start_daemon(SANDBOX_PROVIDER="docker", SANDBOX_SNIPPET_POOL="1", PLIMSOLL_CLIENTS_FILE=clients_file)
    c = client(d)
    fresh = c.describe().policy
    policies = []
    for _ in range(3):
        time.sleep(2)  # the pool refills in the background
        r = c.run_javascript("console.log(require('os').hostname())", minimum_isolation="container")
        assert r.exit_code == 0
        check_record(r, "container")
        policies.append((r.stdout, r.record.policy))
    assert all(p == fresh + ";sandbox=warm-pool" for _, p in policies), (fresh, policies)
    assert len({host for host, _ in policies}) == 3, policies


STANDIN = ROOT / "target" / "debug" / "plimsoll-standin"


@pytest.fixture
def e2b_standin():
    """The E2B stand-in (target/debug/plimsoll-standin, built by the test
    command): its control plane and envd addresses and its one API key."""
    key = "e2b_" + secrets.token_hex(20)
    proc = subprocess.Popen(
        [str(STANDIN), "e2b", "--api", "127.0.0.1:0", "--envd", "127.0.0.1:0",
         "--template", "base=plimsoll/e2b:latest,cpu=1,memory=512,disk=1024"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "E2B_API_KEY": key},
    )
    addrs = json.loads(proc.stdout.readline())
    yield addrs["api"], addrs["envd"], key
    proc.terminate()
    assert proc.wait(60) == 0


def test_e2b_runs_snippets_and_projects_at_vm(start_daemon, clients_file, e2b_standin):
    api, envd, key = e2b_standin
    d = start_daemon(SANDBOX_PROVIDER="e2b", E2B_API_URL=api, E2B_SANDBOX_URL=envd, E2B_API_KEY=key,
                     SANDBOX_MAX_SESSIONS="2", PLIMSOLL_CLIENTS_FILE=clients_file)
    assert key not in d.log()
    c = client(d)
    info = c.describe()
    assert (info.provider, info.isolation, info.supports_project, info.supports_sessions) == ("e2b", "vm", True, True)
    r = c.run_javascript("console.log(6*7)", minimum_isolation="vm")
    assert (r.stdout, r.exit_code) == (b"42\n", 0)
    check_record(r, "vm")
    p = c.run_project(
        {"main.js": "console.log(require('./lib.js'))", "lib/x.txt": "x", "lib.js": "module.exports = 42"},
        ["node main.js > out.txt", "cat out.txt", "exit 4", "echo never"],
        artifacts=["out.txt"],
        minimum_isolation="vm",
    )
    assert p.outcome == "completed", p.detail
    assert [s.exit_code for s in p.steps] == [0, 0, 4]
    assert p.steps[1].stdout == b"42\n"
    assert [(a.path, a.content) for a in p.artifacts] == [("out.txt", b"42\n")]
    check_record(p, "vm")
    # A session: one VM, files and interpreters kept, leftovers gone by the next call.
    session_flow(c, "vm")
    assert d.stop() == 0
    assert key not in d.log()


# What SANDBOX_DOCKERCLOUD_IMAGE names: a raw OCI ref pinned by digest, which
# the stand-in maps to the local Docker Cloud image (no registry here).
DOCKERCLOUD_IMAGE = "registry.example/plimsoll/project@sha256:" + "ab" * 32


@pytest.fixture
def dockercloud_standin():
    """The Docker Cloud Sandboxes stand-in (target/debug/plimsoll-standin):
    its token exchange, management API and endpoint addresses, and the one
    Docker ID and PAT it accepts."""
    user, pat = "plimsoll-ci", "dckr_pat_" + secrets.token_hex(16)
    proc = subprocess.Popen(
        [str(STANDIN), "dockercloud", "--auth", "127.0.0.1:0", "--api", "127.0.0.1:0",
         "--endpoint", "127.0.0.1:0", "--image", f"{DOCKERCLOUD_IMAGE}=plimsoll/dockercloud:latest"],
        stdout=subprocess.PIPE, text=True,
        env={**os.environ, "DOCKER_SBX_USERNAME": user, "DOCKER_SBX_TOKEN": pat},
    )
    addrs = json.loads(proc.stdout.readline())
    yield addrs, user, pat
    proc.terminate()
    assert proc.wait(60) == 0


@pytest.mark.parametrize("contract", ["rest", "connect"])
def test_dockercloud_runs_snippets_and_projects_at_vm(start_daemon, clients_file, dockercloud_standin, contract):
    addrs, user, pat = dockercloud_standin
    d = start_daemon(SANDBOX_PROVIDER="dockercloud", DOCKER_SBX_USERNAME=user, DOCKER_SBX_TOKEN=pat,
                     SANDBOX_DOCKERCLOUD_AUTH_URL=addrs["auth"] + "/v2/auth/token",
                     SANDBOX_DOCKERCLOUD_API=contract,
                     SANDBOX_DOCKERCLOUD_API_URL=addrs["api" if contract == "rest" else "connect"],
                     SANDBOX_DOCKERCLOUD_IMAGE=DOCKERCLOUD_IMAGE, PLIMSOLL_CLIENTS_FILE=clients_file)
    assert pat not in d.log()
    c = client(d)
    info = c.describe()
    assert (info.provider, info.isolation, info.supports_project, info.supports_sessions) == (
        "dockercloud", "vm", True, False)
    # Grants on Docker Cloud go through the guard, not built yet: none are
    # offered (a grants file is a startup error).
    assert not info.supports_javascript_grants and not info.supports_project_grants
    r = c.run_javascript("console.log(6*7)", minimum_isolation="vm")
    assert (r.stdout, r.exit_code) == (b"42\n", 0)
    check_record(r, "vm")
    p = c.run_project(
        {"main.js": "console.log(require('./lib.js'))", "lib/x.txt": "x", "lib.js": "module.exports = 42"},
        ["node main.js > out.txt", "cat out.txt", "exit 4", "echo never"],
        artifacts=["out.txt"],
        minimum_isolation="vm",
    )
    assert p.outcome == "completed", p.detail
    assert [s.exit_code for s in p.steps] == [0, 0, 4]
    assert p.steps[1].stdout == b"42\n"
    assert [(a.path, a.content) for a in p.artifacts] == [("out.txt", b"42\n")]
    check_record(p, "vm")
    # dockercloud keeps no sessions: refused before anything is dispatched.
    with pytest.raises(errors.UnsupportedError) as e:
        c.open_session()
    assert e.value.not_dispatched == "unsupported"
    assert d.stop() == 0
    log = d.log()
    assert pat not in log and "dckr_pat_" not in log


def test_openshell_runs_snippets_and_projects_at_container(start_daemon, clients_file, openshell_standin):
    url, certs = openshell_standin
    d = start_daemon(**openshell_env(url, certs), SANDBOX_MAX_SESSIONS="2", PLIMSOLL_CLIENTS_FILE=clients_file)
    key = (certs / "tls.key").read_text().splitlines()[1]
    c = client(d)
    info = c.describe()
    assert (info.provider, info.isolation, info.supports_project, info.supports_sessions) == (
        "openshell", "container", True, True)
    # Grants through the relay in the sandbox (test_grants.py runs one).
    assert info.supports_javascript_grants and info.supports_project_grants
    r = c.run_javascript("console.log(6*7)", minimum_isolation="container")
    assert (r.stdout, r.exit_code) == (b"42\n", 0)
    check_record(r, "container")
    with pytest.raises(errors.InsufficientIsolationError) as e:
        c.run_javascript("console.log(1)", minimum_isolation="kernel")
    assert e.value.not_dispatched == "isolation"
    p = c.run_project(
        {"main.js": "console.log(require('./lib.js'))", "lib/x.txt": "x", "lib.js": "module.exports = 42"},
        ["node main.js > out.txt", "cat out.txt", "exit 4", "echo never"],
        artifacts=["out.txt"],
        minimum_isolation="container",
    )
    assert p.outcome == "completed", p.detail
    assert [s.exit_code for s in p.steps] == [0, 0, 4]
    assert p.steps[1].stdout == b"42\n"
    assert [(a.path, a.content) for a in p.artifacts] == [("out.txt", b"42\n")]
    check_record(p, "container")
    # A session: one sandbox, files and interpreters kept, leftovers gone by the next call.
    session_flow(c, "container")
    assert d.stop() == 0
    assert key not in d.log()
