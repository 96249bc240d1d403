"""The asyncio API: concurrent runs, and cancelling a task cancels its run."""

from __future__ import annotations

import asyncio
import time

import pytest

import plimsoll
from conftest import WASM


@pytest.mark.asyncio
async def test_concurrent_runs() -> None:
    async with plimsoll.AsyncEngine(WASM) as e:
        d = await e.describe()
        assert d["isolation"] == "process"
        results = await asyncio.gather(*(e.run_javascript(f"console.log({i}*2)") for i in range(4)))
        assert [r.stdout for r in results] == [f"{i * 2}\n".encode() for i in range(4)]
        for r in results:
            plimsoll.verify_run(r.request_json, r.response_json)


@pytest.mark.asyncio
async def test_start_without_blocking_the_loop() -> None:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    ticker = asyncio.ensure_future(tick())
    began = time.monotonic()
    e = await plimsoll.AsyncEngine.start(WASM)
    took = time.monotonic() - began
    ticker.cancel()
    assert isinstance(e, plimsoll.AsyncEngine) and (await e.describe())["isolation"] == "process"
    # A blocking start never yields: the ticker would not run at all. A start
    # that yields but holds the loop would leave it one tick in a long start.
    assert ticks >= 1, "the engine's start never yielded to the event loop"
    if took > 0.05:
        assert ticks > 1, f"the event loop stood still for {took:.3f} s while the engine started"
    with pytest.raises(plimsoll.ConfigError):
        await plimsoll.AsyncEngine.start({"SANDBOX_PROVIDER": "magic"})


@pytest.mark.asyncio
async def test_errors_arrive_as_exceptions() -> None:
    async with plimsoll.AsyncEngine(WASM) as e:
        with pytest.raises(plimsoll.InsufficientIsolationError):
            await e.run_javascript("1", minimum_isolation="vm")
        with pytest.raises(plimsoll.UnsupportedError):
            await e.open_session()
    with pytest.raises(plimsoll.DisabledError):
        await plimsoll.AsyncEngine().run_javascript("1")


async def next_run_gets_the_slot(e: plimsoll._AsyncRunner) -> None:
    """With one run slot, a later run succeeds only once the cancelled run let go of it."""
    deadline = time.monotonic() + 5
    while True:
        try:
            r = await e.run_javascript("console.log(3)")
            assert r.stdout == b"3\n"
            return
        except plimsoll.AtCapacityError:
            assert time.monotonic() < deadline, "the cancelled run kept its slot"
            await asyncio.sleep(0.05)


@pytest.mark.asyncio
async def test_cancelling_the_task_cancels_the_run() -> None:
    async with plimsoll.AsyncEngine({**WASM, "SANDBOX_MAX_CONCURRENT": "1"}) as e:
        t0 = time.monotonic()
        with pytest.raises((asyncio.TimeoutError, TimeoutError)):
            await asyncio.wait_for(e.run_javascript("while (true) {}", timeout_ms=30_000), 0.5)
        assert time.monotonic() - t0 < 3
        await next_run_gets_the_slot(e)
        task = asyncio.ensure_future(e.run_javascript("while (true) {}", timeout_ms=30_000))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await next_run_gets_the_slot(e)


@pytest.mark.asyncio
async def test_async_client_cancel(start_daemon) -> None:
    d = start_daemon(**WASM, PLIMSOLL_INSECURE=1, SANDBOX_MAX_CONCURRENT=1)
    async with plimsoll.AsyncClient(d.url) as c:
        r = await c.run_javascript("console.log(6*7)")
        assert (r.stdout, r.isolation) == (b"42\n", "process")
        with pytest.raises((asyncio.TimeoutError, TimeoutError)):
            await asyncio.wait_for(c.run_javascript("while (true) {}", timeout_ms=30_000), 0.5)
        # The daemon sees the connection close and cancels the run.
        await next_run_gets_the_slot(c)
