"""The plan queue: one bounded queue that every served door's plans go through (``POST /v1/plan``, the MCP tool
``plan_memory``, function calls through :func:`fsdp_skill.adapters.tools.invoke`).

    plan_queue() -> PlanQueue                   the process's queue (one per process, whatever door asks)
    await plan_queued(request) -> PlanReport    check the request, then wait for the queue without a thread
    plan_queued_sync(request) -> PlanReport     the same for a caller that has its own thread to block

A plan takes a CPU core and a child process of about 400 MB for seconds to minutes, so at most
:data:`RUNNING` run at once; behind it at most ``FSDP_SKILL_PLAN_QUEUE`` (default :data:`DEFAULT_WAITING`)
wait.  A request that finds every place taken is refused at once with :class:`~fsdp_skill.errors.QueueFull`
(HTTP 429 with ``Retry-After``, an MCP tool error), never held.  The request is read and checked first
(:func:`~.report.prepare_plan`), so a bad one is refused at once too and never takes a place.

Waiting costs no thread: a waiting plan is an entry in a deque and its caller awaits a
``concurrent.futures.Future`` (``asyncio.wrap_future``), so the event loop and the worker threads of the
HTTP and MCP servers stay free for ``/healthz``, ``/v1/ask`` and the other tools.  The plan itself runs in
the queue's own daemon thread (started when the queue gets work, ended when it is empty), which waits on
the planner's child.  A caller that goes away while its plan waits (a cancelled await) gives its place
back; a plan already running finishes (its child is bounded by the served timeout).
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from fsdp_skill.errors import InvalidArgument, QueueFull
from fsdp_skill.runtime import knobs

if TYPE_CHECKING:
    from fsdp_skill.core.plan.models import PlanReport
    from fsdp_skill.core.plan.report import PreparedPlan
    from fsdp_skill.core.plan.request import PlanKnobs

T = TypeVar("T")
RUNNING = 1  # plans measured at once (each takes a core and a child of about 400 MB)
DEFAULT_WAITING = 4  # plans that may wait behind them (FSDP_SKILL_PLAN_QUEUE)
MAX_WAITING = 1000  # the most FSDP_SKILL_PLAN_QUEUE may say
FIRST_GUESS_S = 10.0  # seconds a plan is taken to last before one has finished (Retry-After's estimate)


def waiting_places() -> int:
    """Plans that may wait behind the running one: ``FSDP_SKILL_PLAN_QUEUE`` (an integer 0..1000; 0: none wait,
    a plan is refused while another runs), else :data:`DEFAULT_WAITING`.  Read at every admission, so a change
    takes effect at the next request.  Raises InvalidArgument for any other value."""
    raw = os.environ.get(knobs.PLAN_QUEUE, "").strip()
    if not raw:
        return DEFAULT_WAITING
    if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_WAITING:
        raise InvalidArgument(f"{knobs.PLAN_QUEUE}={raw!r}: expected the number of waiting plans, 0..{MAX_WAITING} (e.g. 4)")
    return int(raw)


@dataclass
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    future: Future[Any]


@dataclass(frozen=True)
class QueueState:
    """What the queue holds now."""

    running: int  # jobs being run
    waiting: int  # jobs admitted and not started
    mean_s: float  # seconds a recent job took (the mean of the last few; FIRST_GUESS_S before any)


class PlanQueue:
    """At most ``running`` jobs at once, at most ``waiting()`` more admitted behind them, the rest refused at once.

    ``waiting``: the number of waiting places, or a function giving it (read at every admission; default
    :func:`waiting_places`).  ``label`` names a job in the refusal message (``plan``; ``/v1/check`` uses one for its
    checks), ``knob`` the variable that sets the waiting places (None: none does).  Jobs start in the order they were admitted.  Thread-safe, and not tied to one event
    loop: :meth:`submit` is synchronous, :meth:`run` awaits on whatever asyncio loop calls it.
    """

    def __init__(
        self,
        running: int = RUNNING,
        waiting: int | Callable[[], int] = waiting_places,
        *,
        label: str = "plan",
        knob: str | None = knobs.PLAN_QUEUE,
    ):
        if running < 1:
            raise ValueError(f"running({running}) must be >= 1")
        self._label, self._knob = label, knob  # what a job is, and the variable setting the waiting places (messages)
        self._running_max = running
        self._places: Callable[[], int] = (lambda: waiting) if isinstance(waiting, int) else waiting
        self._lock = threading.Lock()
        self._pending: deque[_Job] = deque()
        self._running = 0
        self._started: list[float] = []  # monotonic start time of each running job
        self._recent: deque[float] = deque(maxlen=8)  # seconds of the last jobs that finished

    def state(self) -> QueueState:
        """The running and waiting counts and the recent mean duration (seconds)."""
        with self._lock:
            return QueueState(self._running, len(self._pending), self._mean_locked())

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Admit ``fn(*args)`` and return the future of its result: started now when a running slot is free,
        else queued.  Raises QueueFull at once (nothing admitted) when every running slot and waiting place is
        taken, and InvalidArgument for a bad ``FSDP_SKILL_PLAN_QUEUE``.  Cancelling the future before the job
        starts gives its place back."""
        places = self._places()
        future: Future[T] = Future()
        job = _Job(fn, args, future)
        with self._lock:
            if self._running < self._running_max:
                self._running += 1
                start = True
            elif len(self._pending) < places:
                self._pending.append(job)
                start = False
            else:
                raise QueueFull(self._full_message(places), retry_after_s=self._retry_after_locked())
        future.add_done_callback(lambda f: self._discard(job) if f.cancelled() else None)
        if start:
            threading.Thread(target=self._work, args=(job,), name=f"fsdp-skill-{self._label}-queue", daemon=True).start()
        return future

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``'s result once the queue has run it, awaited without holding a thread; raises QueueFull
        at once as :meth:`submit` does, and whatever ``fn`` raises.  Cancelling the await while the job waits
        gives its place back (a running job finishes)."""
        return await asyncio.wrap_future(self.submit(fn, *args))

    def _work(self, job: _Job | None) -> None:
        """Run ``job``, then every job admitted behind it, in order; the thread ends when none is left.  A job's
        place is handed on (or given back) before its caller is told the result, so a caller that submits again
        as soon as it has its answer finds the place free."""
        while job is not None:
            settle: Callable[[], None] | None = None
            if job.future.set_running_or_notify_cancel():
                began = time.monotonic()
                with self._lock:
                    self._started.append(began)
                settle = self._call(job)
                with self._lock:
                    self._started.remove(began)
                    self._recent.append(time.monotonic() - began)
            with self._lock:
                job = self._pending.popleft() if self._pending else None
                if job is None:
                    self._running -= 1
            if settle is not None:
                settle()

    @staticmethod
    def _call(job: _Job) -> Callable[[], None]:
        """Run ``job``; returns what tells its caller the outcome (its result or whatever it raised)."""
        future = job.future
        try:
            result = job.fn(*job.args)
        except BaseException as exc:  # the caller gets it, whatever it is; the queue goes on
            error = exc  # `exc` is unbound when the except clause ends
            return lambda: future.set_exception(error)
        return lambda: future.set_result(result)

    def _discard(self, job: _Job) -> None:
        with self._lock:
            try:
                self._pending.remove(job)
            except ValueError:  # already taken by the worker (it skips a cancelled job)
                pass

    def _mean_locked(self) -> float:
        return sum(self._recent) / len(self._recent) if self._recent else FIRST_GUESS_S

    def _retry_after_locked(self) -> int:
        """Whole seconds until a place is likely to free up: the recent mean duration less what the oldest
        running job has had (at least 1)."""
        elapsed = time.monotonic() - min(self._started) if self._started else 0.0
        return max(1, math.ceil(self._mean_locked() - elapsed))

    def _full_message(self, places: int) -> str:
        knob = f", {self._knob}" if self._knob else ""
        return (
            f"the {self._label} queue is full: {self._running} {self._label}(s) running and {len(self._pending)} waiting "
            f"(at most {self._running_max} running and {places} waiting{knob}); nothing was started, "
            f"retry in about {self._retry_after_locked()} s"
        )


_QUEUE = PlanQueue()


def plan_queue() -> PlanQueue:
    """The process's plan queue, which every served door's plans share."""
    return _QUEUE


async def plan_queued(request: PlanKnobs, queue: PlanQueue | None = None) -> PlanReport:
    """Check ``request`` (at once: InvalidArgument), then plan it through ``queue`` (default :func:`plan_queue`)
    without holding a thread while it waits.  Raises QueueFull at once when the queue is full, and what
    :func:`~.report.run_plan` raises (InvalidArgument, HarnessError)."""
    from fsdp_skill.core.plan import report

    plan = report.prepare_plan(request)
    return await (queue or plan_queue()).run(_run, plan)


def plan_queued_sync(request: PlanKnobs, queue: PlanQueue | None = None) -> PlanReport:
    """As :func:`plan_queued`, blocking the calling thread until the plan is done (for a caller without an event
    loop: a function-call framework's tool call)."""
    from fsdp_skill.core.plan import report

    plan = report.prepare_plan(request)
    return (queue or plan_queue()).submit(_run, plan).result()


def _run(plan: PreparedPlan) -> PlanReport:
    from fsdp_skill.core.plan import report

    return report.run_plan(plan)  # looked up at each call: tests replace the planner with a stand-in
