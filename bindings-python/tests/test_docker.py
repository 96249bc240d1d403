"""The docker provider (runc: tier container; runsc: tier kernel), embedded and
behind a real plimsolld: snippets and projects, records verified, the floor,
interop with the published client on a project answer, and a cancelled asyncio
task removing its container. Needs the host .ci/setup-host.sh prepares (dockerd
with runsc registered, the plimsoll/snippet and plimsoll/project images); like
the rest of the suite, these tests fail rather than skip without it."""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import time
from typing import Dict, Iterator

import pytest

import plimsoll
from test_interop import capture, compare

TIERS = {"runc": "container", "runsc": "kernel"}


def docker_env(runtime: str, **extra: str) -> Dict[str, str]:
    return {"SANDBOX_PROVIDER": "docker", "SANDBOX_DOCKER_RUNTIME": runtime, "SANDBOX_RATE_PER_MIN": "0", **extra}


@pytest.fixture(scope="module", params=["runc", "runsc"])
def docker_engine(request: pytest.FixtureRequest) -> Iterator[plimsoll.Engine]:
    with plimsoll.Engine(docker_env(request.param)) as e:
        yield e


def test_snippet_and_project(docker_engine: plimsoll.Engine) -> None:
    d = docker_engine.describe()
    tier = d["isolation"]
    assert (d["sandbox"], tier in TIERS.values(), d["supportsProject"]) == ("docker", True, True)
    r = docker_engine.run_javascript("console.log(6*7)", minimum_isolation="container")
    assert (r.stdout, r.exit_code, r.isolation, r.sandbox) == (b"42\n", 0, tier, "docker")
    assert plimsoll.verify_run(r.request_json, r.response_json).isolation == tier
    p = docker_engine.run_project(
        {"main.js": "require('fs').writeFileSync('out.txt', 'hi'); console.log('p')"},
        ["node main.js", "cat out.txt", "exit 3", "echo never"],
        artifacts=["out.txt"],
    )
    assert isinstance(p, plimsoll.ProjectResult) and p.kind == "project"
    assert p.outcome == "completed"
    assert [(s.command, s.stdout, s.exit_code) for s in p.steps] == [
        ("node main.js", b"p\n", 0),
        ("cat out.txt", b"hi", 0),
        ("exit 3", b"", 3),
    ]
    assert p.artifacts == [("out.txt", b"hi")]
    assert plimsoll.verify_run(p.request_json, p.response_json).result_sha256


def test_the_floor_against_the_proven_tier(docker_engine: plimsoll.Engine) -> None:
    tier = docker_engine.describe()["isolation"]
    if tier == "container":
        with pytest.raises(plimsoll.InsufficientIsolationError):
            docker_engine.run_javascript("1", minimum_isolation="kernel")
    else:
        assert docker_engine.run_javascript("1", minimum_isolation="kernel").isolation == "kernel"
    with pytest.raises(plimsoll.InsufficientIsolationError):
        docker_engine.run_javascript("1", minimum_isolation="vm")


def containers(instance: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=io.plimsoll.instance={instance}"],
        check=True, capture_output=True, text=True,
    ).stdout
    return out.split()


@pytest.mark.asyncio
async def test_cancelling_the_task_removes_the_container() -> None:
    instance = "plimsoll:pytest-" + secrets.token_hex(4)
    async with plimsoll.AsyncEngine(docker_env("runc", PLIMSOLL_INSTANCE=instance)) as e:
        task = asyncio.ensure_future(e.run_javascript("setInterval(() => {}, 1000)", timeout_ms=60_000))
        deadline = time.monotonic() + 30
        while not containers(instance):
            assert time.monotonic() < deadline, "the run's container never appeared"
            await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        deadline = time.monotonic() + 15
        while containers(instance):
            assert time.monotonic() < deadline, "the cancelled run's container is still there"
            await asyncio.sleep(0.1)


def test_remote_docker_and_interop_on_a_project(start_daemon) -> None:
    d = start_daemon(**docker_env("runc"), PLIMSOLL_INSECURE=1)
    c = plimsoll.Client(d.url)
    r = c.run_javascript("console.log(6*7)")
    assert (r.stdout, r.isolation) == (b"42\n", "container")
    plimsoll.verify_run(r.request_json, r.response_json)
    p = c.run_project({"a.txt": "x"}, ["cat a.txt", "echo done"])
    assert [s.stdout for s in p.steps] == [b"x", b"done\n"]
    request = {"protocol": 4, "project": {"files": [{"path": "a.sh", "content": "echo hi; echo err >&2"}], "steps": ["sh a.sh", "false"], "artifacts": ["a.sh"]}}
    req, resp = capture(d.url, request)
    assert json.loads(resp)["project"]["outcome"] == "PROJECT_OUTCOME_COMPLETED"
    accepted, rejected = compare(req, resp, kind="project")
    assert rejected > 40, (accepted, rejected)
