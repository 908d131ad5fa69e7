"""``/v1/check``'s analysis in a worker process, off the server's interpreter lock.

``ast.parse`` is one C call that keeps the interpreter lock for its whole length (about 0.3 s for a 190,000-character
file on this kind of machine), and the checker's own walks are pure Python; run in one of the server's threads, either
holds up the event loop, so ``/healthz`` and ``/v1/ask`` wait behind a large check (a probe measured a 0.8 s
``/healthz`` during one). In a separate process (:class:`concurrent.futures.ProcessPoolExecutor`, one worker, started
with ``spawn``: the server has threads, and a fork of a threaded process is unsafe) the server's threads only wait on a
pipe. The worker is started on the first check and kept; it exits by itself when the server process is gone
(:func:`on_parent_exit`: multiprocessing's parent sentinel), and :meth:`CheckWorker.close` stops it at shutdown.

The checker's own budget (``FSDP_SKILL_CHECK_BUDGET`` CPU seconds a file, :func:`fsdp_skill.core.check.engine.check_budget`,
read in the server at each request and handed to the worker) still bounds one analysis; :data:`RESULT_GRACE_S` beyond it the worker is taken as stuck, killed, and the request
gets a 503 ``harness_error``; the next check starts a fresh worker.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING

from fsdp_skill.errors import HarnessError

if TYPE_CHECKING:
    from fsdp_skill.core.check import CheckReport

RESULT_GRACE_S = 30.0  # seconds past the checker's budget before a check is taken as stuck and its worker killed
_LIVE: weakref.WeakSet[CheckWorker] = weakref.WeakSet()  # every CheckWorker of this process, for close_all()


def on_parent_exit(action: Callable[[], object], name: str) -> bool:
    """In a process multiprocessing started (a check worker, a worker of ``serve --workers N``): run ``action`` in a
    daemon thread ``name`` once the parent has exited (multiprocessing's parent sentinel becomes readable, e.g.
    after a SIGKILL that gave the parent no time to stop it). Returns False, doing nothing, in a process that
    multiprocessing did not start."""
    import multiprocessing
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return False
    sentinel = parent.sentinel

    def watch() -> None:
        wait([sentinel])
        action()

    threading.Thread(target=watch, name=name, daemon=True).start()
    return True


def _watch_parent() -> None:
    """Worker initializer: end this process (quietly, at once) once the server that started it is gone; a worker
    must not outlive the process it works for."""
    on_parent_exit(lambda: os._exit(0), "fsdp-skill-check-parent")


def _run_check(code: str, path: str, select: Sequence[str] | None, ignore: Sequence[str] | None, budget: float) -> CheckReport:
    """In the worker: :func:`fsdp_skill.core.check.check_code` under the server's budget of ``budget`` seconds (read
    in the server at the request, as a check in the server's own process would; the worker's environment is the
    one it started with). Its errors, e.g. InvalidArgument, travel back."""
    from fsdp_skill.core.check import check_code
    from fsdp_skill.runtime import knobs

    os.environ[knobs.CHECK_BUDGET] = repr(budget)
    return check_code(code, path, select=select, ignore=ignore)


class CheckWorker:
    """One worker process that runs :func:`fsdp_skill.core.check.check_code` for the HTTP server.

    Calls are made from the server's check queue (one at a time; thread-safe anyway). :meth:`check` blocks the calling
    thread until the report is back; it raises what ``check_code`` raises (InvalidArgument for code over the size
    limit or an unknown rule prefix) and HarnessError when the worker died or ran past the budget (the worker is then
    replaced on the next call)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False
        _LIVE.add(self)

    def _current(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise HarnessError("the server is shutting down: no check was started")
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_watch_parent,
                )
            return self._pool

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        """Kill ``pool``'s worker (if it still runs) and forget the pool, so that the next check starts a fresh one."""
        with self._lock:
            if self._pool is pool:
                self._pool = None
        _kill(pool)

    def check(
        self, code: str, path: str, *, select: Sequence[str] | None = None, ignore: Sequence[str] | None = None
    ) -> CheckReport:
        """The check report for ``code`` (named ``path`` in findings), analysed in the worker process."""
        from fsdp_skill.core.check.engine import check_budget

        budget = check_budget()  # InvalidArgument (400) for a bad FSDP_SKILL_CHECK_BUDGET, before anything starts
        limit = budget + RESULT_GRACE_S
        args = (code, path, list(select) if select else None, list(ignore) if ignore else None, budget)
        pool = self._current()
        try:
            try:
                future = pool.submit(_run_check, *args)
            except BrokenProcessPool:  # the worker died while idle (nothing of this check ran): start a fresh one
                self._discard(pool)
                pool = self._current()
                future = pool.submit(_run_check, *args)
            return future.result(timeout=limit)
        except FutureTimeout:
            self._discard(pool)
            raise HarnessError(f"the check ran past {limit:.0f} s and its worker process was stopped") from None
        except BrokenProcessPool:
            self._discard(pool)
            raise HarnessError("the check's worker process ended before it answered; send the check again") from None

    def close(self) -> None:
        """Stop the worker (a check in flight gets HarnessError); later calls are refused with HarnessError."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            _kill(pool)

    def pids(self) -> list[int]:
        """The worker's process id (none before the first check or after :meth:`close`); for tests."""
        with self._lock:
            pool = self._pool
        procs = getattr(pool, "_processes", None) or {}
        return [p.pid for p in procs.values() if p.pid is not None]


def close_all() -> None:
    """:meth:`CheckWorker.close` on every worker of this process (a SIGTERM of ``serve``)."""
    for worker in list(_LIVE):
        worker.close()


def _kill(pool: ProcessPoolExecutor) -> None:
    """End ``pool`` now: its worker is killed (SIGKILL) and reaped; a pending result gets BrokenProcessPool.

    The executor's processes are read from its ``_processes`` (no public way to kill a worker before Python 3.14's
    ``kill_workers``); where that is missing, ``shutdown`` alone lets the worker finish its check and exit."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        if proc.is_alive():
            proc.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.join(timeout=5)
