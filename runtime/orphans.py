"""What a dead shepherd leaves behind stays owned by the caller (the process running :mod:`.api`).

A rank may SIGKILL its shepherd (:mod:`.shepherd`); the shepherd's child (torchrun's agent, the warm
zygote) then dies too (``PR_SET_PDEATHSIG``), but the ranks and whatever they started would be
reparented to init and keep running.  So the caller is a child subreaper while it has a run in progress
(:func:`watching`, Linux): those orphans are reparented to it, and :func:`sweep`, called after each run
and whenever a shepherd is found dead, SIGKILLs and reaps them with all their descendants.

A process belongs to a run when its environment has ``OWNER_ENV=<this pid>`` (:func:`owner_env`, which
the launchers put in the environment of everything they start; exec'd descendants inherit it,
forked ones share their parent's), or, for a process already dead whose environment can no longer be read,
when it is in the session of a dead shepherd the caller has not reaped yet (``sessions``).  Other children
of the caller (a probe another thread runs and waits for, a live shepherd) are never signalled or reaped.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterable

from fsdp_skill.runtime import procfs
from fsdp_skill.runtime import shepherd as _shepherd

_SHEPHERD = os.path.realpath(_shepherd.__file__)
OWNER_ENV = "FSDP_HARNESS_OWNER"  # not FSDP_SKILL_*: those never reach a rank
SWEEP_LIMIT_S = 10.0  # how long a sweep waits for its victims to die (a process in uninterruptible sleep)
_lock = threading.Lock()  # one sweep at a time
_count_lock = threading.Lock()
_running = 0  # runs in progress in this process (the subreaper mark is set while there is one)
_armed: int | None = None  # the pid that was ever a subreaper (a fork of this process is not one)


def owner_env() -> dict[str, str]:
    """The variable that marks a run's processes as this caller's, ``{OWNER_ENV: str(os.getpid())}``: to
    add to the environment of each launcher this process starts."""
    return {OWNER_ENV: str(os.getpid())}


@contextlib.contextmanager
def watching():
    """Mark this process a child subreaper (Linux only, a no-op elsewhere) for as long as a run is in
    progress in it, i.e. while some thread is inside this context.  Outside runs it is not one, so the
    orphans of unrelated processes it starts go to init as usual (a subreaper must reap them)."""
    global _running, _armed
    with _count_lock:
        _running += 1
        if _running == 1 and _shepherd.prctl(_shepherd.PR_SET_CHILD_SUBREAPER, 1):
            _armed = os.getpid()
    try:
        yield
    finally:
        with _count_lock:
            _running -= 1
            if _running == 0 and _armed == os.getpid():
                _shepherd.prctl(_shepherd.PR_SET_CHILD_SUBREAPER, 0)


def _session(pid: int) -> int | None:
    st = procfs.stat(pid)
    return None if st is None else st.session


def _marked(pid: int, mark: str) -> bool:
    """Whether ``pid`` carries this caller's mark (``OWNER_ENV`` set to ``mark``) and is not a shepherd (a
    live one is waited for by the thread that started it; a dead one has no readable environment)."""
    env = procfs.environ(pid)
    if env is None or env.get(OWNER_ENV) != mark:
        return False
    args = procfs.cmdline(pid)
    return args is not None and _SHEPHERD not in args[:4]


def _belongs(pid: int, mark: str, sessions: set[int]) -> bool:
    if pid in sessions:
        return False  # the dead shepherd itself: its own thread reaps it
    return _marked(pid, mark) or (bool(sessions) and _session(pid) in sessions)


def _reap(pid: int) -> bool:
    """Reap child ``pid`` if it has exited; True once it is gone."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return True


def sweep(sessions: Iterable[int] = ()) -> list[int]:
    """SIGKILL and reap every child of this process that a run left behind (see the module docstring),
    with all of its descendants, until none is left or SWEEP_LIMIT_S seconds have passed.

    ``sessions``: pids of dead, still unreaped shepherds (each led a session of its own); the caller's
    children in those sessions belong to their run even when already dead.  Returns the pids killed
    (empty when this process was never a subreaper or nothing was left).  Never raises."""
    if _armed != os.getpid():
        return []
    me, mark, sessions = os.getpid(), str(os.getpid()), set(sessions)
    victims: set[int] = set()
    killed: list[int] = []
    deadline = time.monotonic() + SWEEP_LIMIT_S
    with _lock:
        while time.monotonic() < deadline:
            tree = procfs.children_map()
            mine = set(tree.get(me, ()))
            victims |= {p for p in mine - victims if _belongs(p, mark, sessions)}
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
