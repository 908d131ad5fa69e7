"""Whether watched folders may have changed since a memo was taken: one inotify instance per process (Linux).

Every ``ask`` checks that the cards, their Chinese bodies and the compatibility record on disk are still the ones
held in memory.  Checking by ``stat`` costs a system call per file (about 30 per ask, a tenth of a warm ask);
:func:`generation` costs one non-blocking ``read`` of the process's inotify queue.  A caller keeps, with what it
memoised, the generation it read *before* its full check (the ``stat`` fingerprint), and skips the full check
while :func:`generation` returns that same value.  The kernel queues an event as part of the system call that
changed the file, so a change made before a call is seen by that call.

The generation moves on (and every caller checks in full once) when:

- any event arrives on any watched folder (an entry created, deleted, renamed, written, closed after writing,
  its attributes or timestamps changed; the folder itself moved or deleted; the queue overflowed);
- a folder is watched for the first time, or watched again after it went away;
- :data:`BACKSTOP_S` seconds passed since it last moved: a network or FUSE file system may not report changes
  made on another machine, so nothing is trusted for longer than that.

:func:`generation` returns None — check in full — where watching is not possible: the first call of a process
about a folder (a one-shot command never pays for the watcher: ctypes and the inotify instance come
when a folder is asked about again), a
platform without inotify, the per-user instance or watch limits reached, or a folder that cannot be watched (a
missing folder is watched through its nearest existing parent, which reports its creation).  After ``fork`` the
child opens its own instance (the inherited one is shared with the parent; reading it would steal its events).
Thread-safe.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Callable, Iterable

BACKSTOP_S = 1.0  # a change no event reports (NFS, FUSE, a clock step) is seen within this many seconds

# <sys/inotify.h>
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x002, 0x004, 0x008
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x040, 0x080, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_IN_Q_OVERFLOW, _IN_IGNORED = 0x4000, 0x8000
_IN_ONLYDIR = 0x01000000
_IN_NONBLOCK, _IN_CLOEXEC = 0o4000, 0o2000000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
)
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then len bytes of name)


class _Watcher:
    """The process's inotify instance: folder path -> watch descriptor, and the generation counter."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = -1  # the process that opened ``fd`` (-1: none opened)
        self.fd = -1
        self.add_watch: Callable[[int, bytes, int], int] | None = None  # libc's inotify_add_watch, once opened
        self.asked: set[str] = set()  # folders asked about in this process: a second question opens the instance
        self.broken = False  # inotify is not available here: always None
        self.gen = 0
        self.moved_at = 0.0  # time.monotonic() when ``gen`` last moved
        self.watched: dict[str, int] = {}  # folder (as given) -> wd of the folder, or of its nearest existing parent
        self.exact: dict[str, bool] = {}  # folder -> whether the wd is the folder's own (False: a parent's)

    def generation(self, folders: Iterable[str], start: bool = True) -> int | None:
        with self.lock:
            if self.broken:
                return None
            if self.pid != os.getpid():
                if self.pid != -1:  # a forked child: the inherited instance is the parent's
                    self.after_fork()
                folders = list(folders)
                if not start:
                    return None
                if not self.asked.issuperset(folders):  # a first look: a one-shot command checks each folder once
                    self.asked.update(folders)
                    return None
                if not self._open():
                    return None
            self._drain()
            for folder in folders:
                if not self.exact.get(folder) and not self._watch(folder):
                    return None
            now = time.monotonic()
            if now - self.moved_at >= BACKSTOP_S:
                self._move(now)
            return self.gen

    def after_fork(self) -> None:
        """In a forked child: a new lock, and the parent's instance closed here (the parent's stays open)."""
        self.lock = threading.Lock()
        if self.pid != -1 and self.pid != os.getpid():
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.pid, self.fd, self.watched, self.exact = -1, -1, {}, {}

    def _open(self) -> bool:
        try:
            import ctypes
            import ctypes.util

            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            init, add = libc.inotify_init1, libc.inotify_add_watch
        except (OSError, AttributeError, ImportError):
            self.broken = True
            return False
        add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        add.restype = ctypes.c_int
        fd = init(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:  # EMFILE: the user's max_user_instances reached; try again next time
            return False
        self.fd, self.pid, self.add_watch = fd, os.getpid(), add
        self._move(time.monotonic())
        return True

    def _watch(self, folder: str) -> bool:
        """Watch ``folder`` (or, while it is missing, its nearest existing parent); False when it cannot be."""
        target = folder
        while True:
            assert self.add_watch is not None  # set by _open
            wd = self.add_watch(self.fd, os.fsencode(target), _MASK)
            if wd >= 0:
                break
            parent = os.path.dirname(target)
            if not parent or parent == target or os.path.isdir(target):  # exists but refused (ENOSPC, EACCES)
                return False
            target = parent
        if self.watched.get(folder) != wd or self.exact.get(folder) != (target == folder):
            self.watched[folder], self.exact[folder] = wd, target == folder
            self._move(time.monotonic())  # changes before the watch existed: the caller's full check sees them
        return True

    def _drain(self) -> None:
        """Read every queued event; any moves the generation; a folder whose watch went away is watched again."""
        moved = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                self.broken = True  # the descriptor is unusable: stop trusting it
                return
            if not data:
                break
            moved = True
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                if mask & (_IN_IGNORED | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_Q_OVERFLOW):
                    self._forget(wd, everything=bool(mask & _IN_Q_OVERFLOW))
        if moved:
            self._move(time.monotonic())

    def _forget(self, wd: int, *, everything: bool) -> None:
        for folder in [f for f, w in self.watched.items() if everything or w == wd]:
            del self.watched[folder]
            del self.exact[folder]

    def _move(self, now: float) -> None:
        self.gen += 1
        self.moved_at = now


_WATCHER = _Watcher()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WATCHER.after_fork)


def generation(folders: Iterable[str], start: bool = True) -> int | None:
    """A counter that moves whenever anything in ``folders`` (absolute or relative paths, as strings) may have
    changed; None when that cannot be known here (then check in full).  ``start=False``: use the instance only if a
    caller with ``start=True`` already opened it (what a one-shot command asks many times, but only alongside
    something it asks once).  See the module docstring."""
    return _WATCHER.generation(folders, start)
