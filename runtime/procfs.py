# file-run: loaded by file by the shepherd and the zygote (under the user's interpreter); standard library only (tests/test_layers.py)
"""Process facts from Linux's ``/proc``, and signal names: the one copy the launchers and their supervisors read.

    stat(pid) -> Stat | None              state, parent, process group and session of a process (None: gone)
    alive(pid) -> bool                    it exists and is not a zombie
    exists(pid) -> bool                   ``/proc/<pid>`` exists (a zombie too)
    children_map() -> {ppid: [pid, ...]}  every process by its parent
    children(pid) -> [pid, ...]           its children
    descendants(root, tree=None)          every live or zombie descendant (a ppid walk)
    environ(pid) -> dict | None           its environment
    cmdline(pid) -> list | None           its argv
    thread_count(), thread_names()        of this process
    signame(num) -> str                   ``'SIGKILL'``, or ``'signal 99'`` for a number without a name

Standard library only, no state, nothing done at import: the shepherd and the zygote run as files under
the user's interpreter and load it by file (``load_sibling("procfs")``, a private copy, so a rank sees no
module of fsdp-skill); package modules import it as ``fsdp_skill.runtime.procfs``.  Without ``/proc``
(not Linux) every reader answers as for a process that is gone, and the process tables are empty.
"""

from __future__ import annotations

import os
import signal
from typing import NamedTuple

PROC = "/proc"


class Stat(NamedTuple):
    """The fields of ``/proc/<pid>/stat`` the harness needs."""

    state: str  # one letter: R running, S sleeping, D disk sleep, Z zombie, T stopped, ...
    ppid: int
    pgrp: int  # process group id
    session: int  # session id


def stat(pid: int) -> Stat | None:
    """The :class:`Stat` of ``pid``, or None when it is gone (or there is no ``/proc``)."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # the command name, in parentheses, may hold spaces
    return Stat(fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]))


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    st = stat(pid)
    return st is not None and st.state != "Z"


def exists(pid: int) -> bool:
    """Whether ``/proc/<pid>`` exists: the process runs or is a zombie not reaped yet."""
    return os.path.exists(f"{PROC}/{pid}")


def pids() -> list[int]:
    """Every process id in ``/proc`` (empty without it)."""
    try:
        return [int(e) for e in os.listdir(PROC) if e.isdigit()]
    except OSError:
        return []


def children_map() -> dict[int, list[int]]:
    """``{ppid: [pid, ...]}`` of every process in ``/proc`` (empty without it)."""
    out: dict[int, list[int]] = {}
    for pid in pids():
        st = stat(pid)
        if st is not None:
            out.setdefault(st.ppid, []).append(pid)
    return out


def children(pid: int) -> list[int]:
    """Pids of the children of ``pid``."""
    return children_map().get(pid, [])


def descendants(root: int, tree: dict[int, list[int]] | None = None) -> list[int]:
    """Pids of every live or zombie descendant of ``root`` (a ppid walk over ``tree``, default a fresh
    :func:`children_map`)."""
    if tree is None:
        tree = children_map()
    out, todo = [], list(tree.get(root, ()))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(tree.get(pid, ()))
    return out


def environ(pid: int) -> dict[str, str] | None:
    """The environment of ``pid`` (names and values decoded as ``os.fsdecode`` does; of a name given
    twice, the first, as ``getenv`` sees it), or None when it cannot be read (gone, a zombie's is empty,
    another user's)."""
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return None
    env: dict[str, str] = {}
    for item in data.split(b"\0"):
        name, eq, value = item.partition(b"=")
        if eq:
            env.setdefault(os.fsdecode(name), os.fsdecode(value))
    return env


def cmdline(pid: int) -> list[str] | None:
    """The arguments ``pid`` was started with (``argv``; empty for a zombie or a kernel thread), or None
    when it is gone."""
    try:
        with open(f"{PROC}/{pid}/cmdline", "rb") as f:
            data = f.read()
    except OSError:
        return None
    args = data.split(b"\0")
    if args[-1] == b"":  # the usual final NUL (a process that rewrote its argv may leave none)
        args.pop()
    return [os.fsdecode(a) for a in args]


def thread_count() -> int:
    """Threads of this process, from ``/proc/self/task`` (without it, the threads :mod:`threading` knows)."""
    try:
        return len(os.listdir(f"{PROC}/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def thread_names() -> list[str]:
    """Names of this process's threads (``comm``), in thread id order; as many as could be read."""
    names = []
    try:
        for tid in sorted(os.listdir(f"{PROC}/self/task"), key=int):
            with open(f"{PROC}/self/task/{tid}/comm") as f:
                names.append(f.read().strip())
    except OSError:
        pass
    return names


def signame(num: int) -> str:
    """The name of signal ``num`` (``'SIGABRT'``), or ``'signal N'`` when it has none here."""
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
