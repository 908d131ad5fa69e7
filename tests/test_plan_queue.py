"""The plan queue (skill/core/plan/queue.py) that every served door's plans share: one plan measured at a time, a
few waiting without a thread, the rest refused at once (HTTP 429 with Retry-After, an MCP tool error, QueueFull
from a function call); a bad request is refused before it takes a place; /healthz answers while plans run and wait.

Nothing here runs the planner: ``report.run_plan`` (what the queue runs) is replaced by a stand-in that blocks
until the test releases it, so "full" and "running" are states the test waits for, never a timing guess.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import anyio
import httpx
import pytest

from fsdp_skill.core.plan import report as plan_report
from fsdp_skill.core.plan.models import PlanReport
from fsdp_skill.core.plan.queue import DEFAULT_WAITING, PlanQueue, plan_queue, waiting_places
from fsdp_skill.errors import InvalidArgument, QueueFull
from fsdp_skill.runtime import knobs

SMALL = "layers=2,dim=64,heads=4,kv_heads=2,ffn=128,vocab=256"
BODY = {"transformer": SMALL, "world_size": 2, "seq": 16}
PATIENCE_S = 60.0  # how long a test waits for a state it expects (a broken queue never reaches it)


class GatedPlanner:
    """Stands in for ``report.run_plan``: each call records its plan, blocks until :meth:`release`, and returns a
    small report; ``most`` is the most calls that were ever inside at once."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0
        self.plans: list[plan_report.PreparedPlan] = []

    def __call__(self, plan: plan_report.PreparedPlan) -> PlanReport:
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
            self.plans.append(plan)
        try:
            if not self.gate.wait(PATIENCE_S):
                raise AssertionError("the test never released the planner")
        finally:
            with self.lock:
                self.inside -= 1
        return PlanReport(
            model="stand-in",
            params=0,
            rows=[],
            estimates=[],
            measured="nothing (a stand-in for the planner)",
            not_measured=[],
            suggestions=[],
            command=plan.command,
            torch_version="none",
        )

    def release(self) -> None:
        self.gate.set()


@pytest.fixture
def planner(monkeypatch) -> Iterator[GatedPlanner]:
    """The stand-in planner; released at the end whatever the test did, and the process's queue left empty."""
    fake = GatedPlanner()
    monkeypatch.setattr(plan_report, "run_plan", fake)
    yield fake
    fake.release()
    _wait_for(lambda: plan_queue().state().running == 0 and plan_queue().state().waiting == 0)


def _wait_for(condition) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        assert time.monotonic() < deadline, "the queue never reached the expected state"
        time.sleep(0.005)


async def _await_state(running: int, waiting: int) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while (s := plan_queue().state()).running != running or s.waiting != waiting:
        assert time.monotonic() < deadline, f"queue at {s}, expected {running} running and {waiting} waiting"
        await asyncio.sleep(0.005)


# --------------------------------------------------------------------------- the queue itself
def test_one_runs_the_places_wait_in_order_the_next_is_refused_at_once():
    gate, order = threading.Event(), []

    def job(name: str) -> str:
        gate.wait(PATIENCE_S)
        order.append(name)
        return name

    q = PlanQueue(running=1, waiting=2)
    futures = [q.submit(job, n) for n in ("a", "b", "c")]
    _wait_for(lambda: q.state().running == 1)
    assert (q.state().running, q.state().waiting) == (1, 2)
    with pytest.raises(QueueFull, match=r"1 plan\(s\) running and 2 waiting") as full:
        q.submit(job, "d")
    assert full.value.retry_after_s >= 1 and "retry in about" in str(full.value)
    gate.set()
    assert [f.result(PATIENCE_S) for f in futures] == ["a", "b", "c"] == order
    assert q.submit(job, "e").result(PATIENCE_S) == "e"  # places free again
    assert (q.state().running, q.state().waiting) == (0, 0)


def test_a_cancelled_waiting_job_gives_its_place_back_and_an_error_reaches_its_caller():
    gate = threading.Event()
    q = PlanQueue(running=1, waiting=1)
    first = q.submit(gate.wait, PATIENCE_S)
    second = q.submit(str, "never run")
    with pytest.raises(QueueFull):
        q.submit(str, "refused")
    assert second.cancel() and q.state().waiting == 0  # its place is free at once
    third = q.submit(lambda: 1 / 0)
    gate.set()
    assert first.result(PATIENCE_S) is True
    with pytest.raises(ZeroDivisionError):
        third.result(PATIENCE_S)
    assert q.submit(str, "after").result(PATIENCE_S) == "after"  # the worker went on after the error


def test_waiting_places_come_from_the_knob(monkeypatch):
    monkeypatch.delenv(knobs.PLAN_QUEUE, raising=False)
    assert waiting_places() == DEFAULT_WAITING == 4
    monkeypatch.setenv(knobs.PLAN_QUEUE, "0")
    assert waiting_places() == 0
    for bad in ("-1", "two", "1.5", "1001"):
        monkeypatch.setenv(knobs.PLAN_QUEUE, bad)
        with pytest.raises(InvalidArgument, match=rf"{knobs.PLAN_QUEUE}='{bad}'"):
            waiting_places()


# --------------------------------------------------------------------------- HTTP
def test_http_full_queue_is_429_at_once_bad_bodies_never_queue_and_healthz_answers(planner, monkeypatch):
    from fsdp_skill.adapters.http.app import create_app

    monkeypatch.setenv(knobs.PLAN_QUEUE, "2")

    async def go():
        # two worker threads in all: plans that held one each while they waited would leave none for /healthz
        anyio.to_thread.current_default_thread_limiter().total_tokens = 2
        transport = httpx.ASGITransport(app=create_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=PATIENCE_S) as c:
            plans = [asyncio.create_task(c.post("/v1/plan", json=BODY)) for _ in range(3)]
            await _await_state(running=1, waiting=2)
            full = await c.post("/v1/plan", json=BODY)
            bad = [
                await c.post("/v1/plan", json={**BODY, "world_size": "2"}),  # 422: a string for an int
                await c.post("/v1/plan", json={"transformer": SMALL.replace("dim=64", "dim=66")}),  # 400: dim/heads
                await c.post("/v1/plan", json={**BODY, "world_size": 65536}),  # 400: over the served size bound
                await c.post("/v1/plan", content=b"{not json"),  # 422: malformed
            ]
            health = await asyncio.wait_for(c.get("/healthz"), PATIENCE_S)
            state = plan_queue().state()
            planner.release()
            done = await asyncio.gather(*plans)
        return full, bad, health, state, done

    full, bad, health, state, done = asyncio.run(go())
    assert full.status_code == 429 and full.json()["code"] == "queue_full", full.text
    assert int(full.headers["Retry-After"]) >= 1
    assert "the plan queue is full: 1 plan(s) running and 2 waiting" in full.json()["error"]
    assert [r.status_code for r in bad] == [422, 400, 400, 422], [r.text for r in bad]
    assert "plan too large to serve" in bad[2].json()["error"]
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert (state.running, state.waiting) == (1, 2)  # the bad bodies took no place
    assert [r.status_code for r in done] == [200, 200, 200]
    assert len(planner.plans) == 3 and planner.most == 1  # one at a time, and only the three admitted ran
    assert done[0].json()["command"].startswith(f"fsdp-skill plan --transformer {SMALL} --world-size 2 ")


def test_http_bad_knob_is_a_400_not_a_500(planner, monkeypatch):
    from fastapi.testclient import TestClient

    from fsdp_skill.adapters.http.app import create_app

    monkeypatch.setenv(knobs.PLAN_QUEUE, "lots")
    with TestClient(create_app()) as client:
        r = client.post("/v1/plan", json=BODY)
    assert r.status_code == 400 and knobs.PLAN_QUEUE in r.json()["error"] and planner.plans == []


def test_openapi_lists_the_429():
    from fsdp_skill.adapters.http.app import create_app

    responses = create_app().openapi()["paths"]["/v1/plan"]["post"]["responses"]
    assert "429" in responses and "Retry-After" in responses["429"]["description"]


# --------------------------------------------------------------------------- MCP and function calls: the same queue
def test_mcp_plan_memory_shares_the_queue_eight_parallel_calls_run_one_at_a_time(planner, monkeypatch):
    from mcp import Client

    from fsdp_skill.adapters.mcp.server import build_server

    monkeypatch.delenv(knobs.PLAN_QUEUE, raising=False)  # the default: 4 waiting

    async def go():
        async with Client(build_server()) as client:
            calls = [asyncio.create_task(client.call_tool("plan_memory", BODY)) for _ in range(8)]
            await _await_state(running=1, waiting=4)
            refused = [c for c in calls if c.done()]  # the three that found the queue full were answered at once
            bad = await client.call_tool("plan_memory", {**BODY, "world_size": 65536})
            state = plan_queue().state()
            planner.release()
            return refused, bad, state, await asyncio.gather(*calls)

    refused, bad, state, results = asyncio.run(go())
    errors = [r for r in results if r.is_error]
    assert len(refused) == 3 and len(errors) == 3 and all(c.result().is_error for c in refused)
    assert all("QueueFull: the plan queue is full" in r.content[0].text for r in errors), errors[0].content[0].text
    assert bad.is_error and "plan too large to serve" in bad.content[0].text and (state.running, state.waiting) == (1, 4)
    ok = [r for r in results if not r.is_error]
    assert len(ok) == 5 and all(r.structured_content["model"] == "stand-in" for r in ok)
    assert len(planner.plans) == 5 and planner.most == 1


def test_http_and_mcp_and_function_calls_fill_one_queue(planner, monkeypatch):
    from mcp import Client

    from fsdp_skill.adapters.http.app import create_app
    from fsdp_skill.adapters.mcp.server import build_server
    from fsdp_skill.adapters.tools import invoke

    monkeypatch.setenv(knobs.PLAN_QUEUE, "1")

    async def go():
        transport = httpx.ASGITransport(app=create_app())
        async with (
            httpx.AsyncClient(transport=transport, base_url="http://test", timeout=PATIENCE_S) as http,
            Client(build_server()) as mcp,
        ):
            running = asyncio.create_task(http.post("/v1/plan", json=BODY))  # HTTP takes the running slot
            await _await_state(running=1, waiting=0)
            waiting = asyncio.create_task(mcp.call_tool("plan_memory", BODY))  # MCP the one waiting place
            await _await_state(running=1, waiting=1)
            full_http = await http.post("/v1/plan", json=BODY)
            full_mcp = await mcp.call_tool("plan_memory", BODY)
            with pytest.raises(QueueFull):
                invoke("plan_memory", BODY)  # a function call: the same queue, refused at once too
            planner.release()
            return await running, await waiting, full_http, full_mcp

    running, waiting, full_http, full_mcp = asyncio.run(go())
    assert running.status_code == 200 and not waiting.is_error
    assert full_http.status_code == 429 and full_mcp.is_error and "plan queue is full" in full_mcp.content[0].text
    assert planner.most == 1 and len(planner.plans) == 2
    assert invoke("plan_memory", BODY).model == "stand-in"  # released: a function call is planned through it


@pytest.mark.parametrize("fails", [False, True])
def test_a_jobs_place_is_free_when_its_caller_is_told_the_outcome(fails):
    """A caller that submits again the moment it has its answer must find the place free (with no waiting place, a
    place given back only after the result would refuse it with queue_full: /v1/check's test saw it under load)."""
    from fsdp_skill.core.plan.queue import PlanQueue

    queue = PlanQueue(running=1, waiting=0, label="check", knob=None)
    seen: list[int] = []

    def job() -> int:
        if fails:
            raise RuntimeError("boom")
        return 1

    future = queue.submit(job)
    future.add_done_callback(lambda f: seen.append(queue.state().running))  # runs as the outcome is set
    future.exception(timeout=30) if fails else future.result(timeout=30)
    assert seen == [0]
    assert queue.submit(lambda: 2).result(timeout=30) == 2
