"""What a dead shepherd leaves behind stays owned by the caller (the process running :mod:`.api`).

A rank may SIGKILL its shepherd (:mod:`.shepherd`); the shepherd's child (torchrun's agent, the warm
zygote) then dies too (``PR_SET_PDEATHSIG``), but the ranks and whatever they started would be
reparented to init and keep running.  So the caller is a child subreaper while it has a run in progress
(:func:`watching`, Linux): those orphans are reparented to it, and :func:`sweep`, called after each run
and whenever a shepherd is found dead, SIGKILLs and reaps them with all their descendants.

A child of the caller belongs to a run when it is in a session other than the caller's and is not one the
caller started itself (:func:`start`: the shepherds).  Every launcher starts its shepherd in a session of
its own, and a process can only ever leave its session for a new one it leads (``setsid``, the session id
is then its own pid): no process of a run can enter the caller's session, whatever it does with sessions,
process groups, its environment or its ancestors.  Other children of the caller (a probe another thread
runs and waits for, in the caller's session; a live shepherd) are never signalled or reaped.  No mark in
the environment is needed, so none reaches a rank (a rank that knew the caller's pid could read its
``/proc/PID/environ`` but for :func:`watching` below).

What is guaranteed (Linux): every process descended from a run that is alive when the run ends (or times
out, or its shepherd is found dead) is killed and reaped, also one that started a session of its own, wiped
its environment and killed its shepherd, zygote or agent.  What is not: a process of the same user can
always signal the caller itself; a run that SIGKILLs its caller leaves its orphans to init (or to a
subreaper above the caller).  A PID namespace would close that (nothing inside can see, hence signal, a
process outside), but it needs unprivileged user namespaces, which many hosts disable, and it changes the
pids and ``/proc`` the ranks see; it is not used.  Elsewhere than Linux there is no subreaper and
:func:`sweep` does nothing (the launchers kill their process groups).

While a run is in progress the caller is also not dumpable (``PR_SET_DUMPABLE=0``, Linux): its
``/proc/PID/environ``, ``mem`` and the like belong to root, so a run's processes (the same user) cannot read
the caller's environment (``FSDP_SKILL_HOME``, a token).  Side effects, for the run's duration only: the
caller writes no core dump, and a debugger or ``py-spy`` of the same user cannot attach to it (root still
can, as root reads every process's ``/proc``); the previous setting is restored when its last run ends.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from subprocess import Popen
from typing import Any, TypeVar

from fsdp_skill.runtime import procfs
from fsdp_skill.runtime import shepherd as _shepherd

SWEEP_LIMIT_S = 10.0  # how long a sweep waits for its victims to die (a process in uninterruptible sleep)
_lock = threading.Lock()  # one sweep at a time
_count_lock = threading.Lock()
_start_lock = threading.RLock()  # no sweep between the start of a shepherd and its being held
_held: weakref.WeakSet[Popen[Any]] = weakref.WeakSet()  # children this process started in sessions of their own
_running = 0  # runs in progress in this process (the subreaper mark is set while there is one)
_armed: int | None = None  # the pid that was ever a subreaper (a fork of this process is not one)
_dumpable: int | None = None  # 1 when _hide cleared the dumpable flag (set again after the last run in progress)
P = TypeVar("P", bound="Popen[Any]")


def start(spawn: Callable[[], P]) -> P:
    """Call ``spawn`` (which starts one child of this process in a session of its own, a shepherd, and returns
    its Popen) with no :func:`sweep` in between, and hold that child: sweeps never take it for an orphan
    while it is unreaped.  Returns what ``spawn`` returned; its errors propagate."""
    with _start_lock:
        proc = spawn()
        _held.add(proc)
    return proc


def _held_pids() -> set[int]:
    return {p.pid for p in list(_held) if p.returncode is None}  # a reaped one's pid may be anyone's now


@contextlib.contextmanager
def watching() -> Iterator[None]:
    """Mark this process a child subreaper and not dumpable (Linux only, a no-op elsewhere) for as long as a
    run is in progress in it, i.e. while some thread is inside this context.  Outside runs it is neither, so
    the orphans of unrelated processes it starts go to init as usual (a subreaper must reap them)."""
    global _running, _armed
    with _count_lock:
        _running += 1
        if _running == 1:
            _hide()
            if _shepherd.prctl(_shepherd.PR_SET_CHILD_SUBREAPER, 1):
                _armed = os.getpid()
    try:
        yield
    finally:
        with _count_lock:
            _running -= 1
            if _running == 0:
                _unhide()
                if _armed == os.getpid():
                    _shepherd.prctl(_shepherd.PR_SET_CHILD_SUBREAPER, 0)


def _hide() -> None:
    """Make this process not dumpable, to be made dumpable again by :func:`_unhide` (see the module docstring).
    A process already not dumpable (0, or 2: readable by root only, which no prctl can set again) is left."""
    global _dumpable
    if _shepherd.prctl_get(_shepherd.PR_GET_DUMPABLE) == 1 and _shepherd.prctl(_shepherd.PR_SET_DUMPABLE, 0):
        _dumpable = 1


def _unhide() -> None:
    global _dumpable
    if _dumpable is not None:
        _shepherd.prctl(_shepherd.PR_SET_DUMPABLE, _dumpable)
        _dumpable = None


def _session(pid: int) -> int | None:
    st = procfs.stat(pid)
    return None if st is None else st.session


def _reap(pid: int) -> bool:
    """Reap child ``pid`` if it has exited; True once it is gone."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return True


def _orphans(me: int, mine: set[int]) -> set[int]:
    """The children of ``me`` (``mine``) that belong to a run: outside this process's session, not held."""
    own, held = _session(me), _held_pids()
    return {p for p in mine - held if (s := _session(p)) is not None and s != own}


def sweep() -> list[int]:
    """SIGKILL and reap every child of this process that a run left behind (see the module docstring),
    with all of its descendants, until none is left or SWEEP_LIMIT_S seconds have passed.

    Returns the pids killed (empty when this process was never a subreaper or nothing was left).  Never raises."""
    if _armed != os.getpid():
        return []
    me = os.getpid()
    victims: set[int] = set()
    killed: list[int] = []
    deadline = time.monotonic() + SWEEP_LIMIT_S
    with _lock:
        while time.monotonic() < deadline:
            with _start_lock:  # a shepherd being started is held before it is seen here
                tree = procfs.children_map()
                mine = set(tree.get(me, ()))
                victims |= _orphans(me, mine - victims)
                victims |= {d for p in list(victims) for d in procfs.descendants(p, tree)}
                victims = {p for p in victims if procfs.exists(p)}  # a pid gone stays forgotten
                if not victims:
                    break
                for pid in victims:
                    if pid not in killed:
                        killed.append(pid)
                    _shepherd.kill(pid)
            victims -= {p for p in victims & mine if _reap(p)}
            time.sleep(0.005)  # the rest are being reparented to us (their parent just died)
    return killed
