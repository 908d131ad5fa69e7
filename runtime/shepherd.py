# file-run: started as a file under the user's interpreter; standard library and torch only (tests/test_layers.py)
"""Supervisor of one launcher process tree: ``python .../runtime/shepherd.py [--rmtree DIR]... [--fd N]... -- CMD ARGS...``.

The torchrun launcher runs ``python -m torch.distributed.run`` under it and the warm launcher its zygote,
so that every process a run causes (ranks, their children, grandchildren that started a session of their
own) stays owned by the tool.  Linux only (``prctl``); elsewhere it still runs ``CMD`` and kills its
process group, which is what the launchers did before.  Standard library only: it is started as a file
(``--fd N``: an inherited descriptor passed on to ``CMD``).

* It marks itself ``PR_SET_CHILD_SUBREAPER``: a descendant whose parent exits is reparented to the
  shepherd, never to init, so ``procfs.descendants`` (a ppid walk over ``/proc``) finds every process left.
* It is not dumpable (``PR_SET_DUMPABLE=0``): its ``/proc/PID/environ`` (the caller's variables it was given)
  and ``mem`` belong to root, so the run's processes, which need nothing of it, cannot read them; it writes
  no core dump and the same user cannot attach a debugger to it.  Its command, started by ``execve``, is
  dumpable again (the kernel resets the flag), so nothing below the shepherd is affected.
* Its stdin is a pipe whose only writer is the caller: EOF means the caller exited, however it died
  (SIGKILL included).  Unlike ``PR_SET_PDEATHSIG``, which fires when the *thread* that forked a child
  exits, this also holds when a server starts a launcher from a worker thread that later ends.  The
  shepherd's own child gets ``PR_SET_PDEATHSIG=SIGKILL`` (it dies if the shepherd is killed).
* End of the command, SIGTERM/SIGINT/SIGHUP from the caller (``kill the run``) or EOF: every descendant
  is SIGKILLed (by process group and by pid) and reaped, repeatedly until none is left; then it exits
  with the command's status (``128+N`` for a signal).  On EOF it also removes each ``--rmtree`` directory
  (the caller, gone, cannot).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import time
import types


def load_sibling(name: str) -> types.ModuleType:
    """Module ``name`` (its file beside this one) as a private module object, not registered in ``sys.modules``:
    the shepherd runs as a file (``python -I shepherd.py``), where no package is there to import from."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_fsdp_skill_shepherd_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


procfs = load_sibling("procfs")
PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
_libc = None


def _call(option: int, value: int) -> int:
    """``prctl(option, value, 0, 0, 0)``'s result; -1 when it is unavailable (not Linux) or refused."""
    global _libc
    try:
        import ctypes

        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        return int(_libc.prctl(option, value, 0, 0, 0))
    except (OSError, AttributeError):
        return -1


def prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False when it is unavailable (not Linux) or refused."""
    return _call(option, value) == 0


def prctl_get(option: int) -> int:
    """The value a ``PR_GET_*`` option returns (e.g. ``PR_GET_DUMPABLE``: 0, 1 or 2); -1 when unavailable."""
    return _call(option, 0)


def kill(pid: int) -> None:
    """SIGKILL ``pid`` and, if it leads one, its process group (errors ignored: it may be gone)."""
    for fn in (os.killpg, os.kill):
        try:
            fn(pid, signal.SIGKILL)  # a pid that leads its own group or session: its whole group too
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(me: int, keep: int | None = None, statuses: dict[int, int] | None = None) -> None:
    """SIGKILL every descendant of ``me`` and reap those that are its children (all of them, once
    reparented: ``me`` is a subreaper), until none is left.  ``keep`` (the command, already exited and
    unreaped) is left to the caller; ``statuses`` collects the wait status of each pid reaped."""
    while True:
        pids = [p for p in procfs.descendants(me) if p != keep]
        if not pids:
            return
        for pid in pids:
            kill(pid)
        for pid in pids:
            st = procfs.stat(pid)
            if st is not None and st.ppid == me:
                try:
                    _, status = os.waitpid(pid, 0)
                    if statuses is not None:
                        statuses[pid] = status
                except ChildProcessError:
                    pass
        time.sleep(0.005)  # the rest are being reparented to us (their parent just died)


def main(argv: list[str]) -> int:
    """Run the command after ``--`` and supervise it (see the module docstring); returns its exit code."""
    rmtree, fds = [], []
    while len(argv) > 1 and argv[0] in ("--rmtree", "--fd"):
        (rmtree.append(argv[1]) if argv[0] == "--rmtree" else fds.append(int(argv[1])))
        argv = argv[2:]
    if not argv or argv[0] != "--" or len(argv) < 2:
        print("usage: shepherd.py [--rmtree DIR]... [--fd N]... -- CMD [ARGS...]", file=sys.stderr)
        return 2
    cmd = argv[1:]
    me = os.getpid()
    prctl(PR_SET_DUMPABLE, 0)
    subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1)
    stop = []
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)  # a signal also ends the select below
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda num, _frame: stop.append(num))
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, pass_fds=fds, preexec_fn=lambda: prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    )
    for fd in fds:  # the command's now: a copy here would hide its exit from the other end (e.g. a socket)
        os.close(fd)
    try:
        pidfd = os.pidfd_open(proc.pid)  # readable once the command exits
    except (AttributeError, OSError):
        pidfd = None
    gone = False  # the caller exited (EOF on stdin)
    while not stop and not gone:
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                break  # exited; left unreaped, so its pid is not reused while we signal
        except ChildProcessError:
            break
        watch = [0, wake_r] + ([pidfd] if pidfd is not None else [])
        ready, _, _ = select.select(watch, [], [], None if pidfd is not None else 0.05)
        if 0 in ready:
            try:
                gone = not os.read(0, 4096)
            except OSError:
                gone = True
    try:
        os.kill(proc.pid, signal.SIGKILL)  # unreaped, so the pid is ours; a zombie ignores it
    except ProcessLookupError:
        pass
    if subreaper:
        kill_tree(me, keep=proc.pid)
    status = proc.wait()
    if subreaper:
        kill_tree(me)
    if gone:
        for path in rmtree:
            shutil.rmtree(path, ignore_errors=True)
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
