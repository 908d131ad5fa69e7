"""Client side of the warm launcher: starts the zygote (:mod:`fsdp_skill.runtime.zygote`) and sends it jobs.

One :class:`WarmLauncher` per process (see :func:`shared`), started lazily on the first warm run and
reused by every later one (``verify_many`` runs a whole batch on it), closed at interpreter exit or by
:func:`shutdown`.  It is safe to call from several threads at once: requests carry ids and a reader thread
hands each result to the thread that waits for it.  The zygote runs in its own session, so a terminal's
Ctrl-C reaches only this process; when this process dies in any way the kernel closes the control socket
and the zygote kills and reaps every rank before exiting.  On Linux the zygote runs under a shepherd
(:mod:`fsdp_skill.runtime.shepherd`, a child subreaper): if the zygote itself dies (a rank killed it),
the shepherd kills and reaps whatever it left, and removes the launcher's directory when this process
is gone; the job that was running then raises :class:`LauncherDied`.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsdp_skill.errors import HarnessError
from fsdp_skill.runtime import knobs, orphans
from fsdp_skill.runtime.report import RawRank, RawRun, read_text

START_TIMEOUT_S = 300.0  # importing torch on a loaded 2-core machine can take a while
# Started as a file, not as a module of this package: the zygote and the ranks it forks hold none of the
# tool's modules (nor pydantic), only the standard library and torch.
ZYGOTE_SCRIPT = str(Path(__file__).resolve().with_name("zygote.py"))
SHEPHERD = sys.platform == "linux"
SHEPHERD_SCRIPT = str(Path(__file__).resolve().with_name("shepherd.py"))


class LauncherDied(HarnessError):
    """The zygote exited while a job was running (e.g. a rank killed it); the next :func:`shared` call
    starts a fresh one."""


@dataclass
class _Slot:
    """Where the reader thread leaves a job's ``result`` message (None: the zygote went away) for its caller."""

    event: threading.Event = field(default_factory=threading.Event)
    msg: dict[str, Any] | None = None


class WarmLauncher:
    """A running zygote and the channel to it.

    Raises HarnessError from the constructor when the zygote cannot start (torch missing, threads alive
    after the preload, no answer within ``start_timeout`` seconds).
    """

    def __init__(self, start_timeout: float = START_TIMEOUT_S, python: str | None = None):
        self.python = python or sys.executable  # the interpreter the zygote and its ranks run under
        self.workdir = tempfile.mkdtemp(prefix="fsdp-skill-warm-")
        self._log_path = os.path.join(self.workdir, "zygote.log")
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: dict[str, _Slot] = {}
        self._closed = False
        self._closing = False  # close() was called: a job left without an answer was stopped, not killed
        ours, theirs = socket.socketpair()
        # The zygote keeps the launcher's knobs it reads (FSDP_SKILL_PRELOAD, FSDP_SKILL_WARM_EXIT) and no other
        # FSDP_SKILL_* variable (where the tool keeps its state, which interpreter it targets, any a developer set):
        # ranks can read their parent's /proc/PID/environ.
        env = {k: v for k, v in os.environ.items() if not k.startswith(knobs.PREFIX) or k in knobs.ZYGOTE}
        env.setdefault("OMP_NUM_THREADS", "1")
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        cmd = [self.python, ZYGOTE_SCRIPT, "--fd", str(theirs.fileno()), "--workdir", self.workdir]
        if SHEPHERD:
            cmd = [self.python, "-I", SHEPHERD_SCRIPT, "--rmtree", self.workdir, "--fd", str(theirs.fileno()), "--", *cmd]
        try:
            with open(self._log_path, "wb") as log:
                self.proc = orphans.start(  # held: never taken for a run's orphan by a sweep
                    lambda: subprocess.Popen(
                        cmd,
                        pass_fds=(theirs.fileno(),),
                        stdin=subprocess.PIPE if SHEPHERD else subprocess.DEVNULL,
                        stdout=log,
                        stderr=log,
                        cwd=self.workdir,
                        env=env,
                        start_new_session=True,
                    )
                )
        except OSError as exc:
            ours.close()
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise HarnessError(f"cannot start the warm launcher ({self.python}): {exc}") from exc
        finally:
            theirs.close()
        self._sock = ours
        self._reader = ours.makefile("rb")
        ours.settimeout(start_timeout)
        try:
            line = self._reader.readline()
        except OSError:  # socket.timeout is an OSError
            line = b""
        ours.settimeout(None)
        msg: dict[str, Any] = json.loads(line) if line.strip() else {"type": "fatal", "message": self._log_tail()}
        if msg.get("type") != "ready":
            self._terminate()
            self._reader.close()
            ours.close()
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise HarnessError(f"the warm launcher did not start under {self.python}: {msg.get('message') or 'no answer'}")
        self.pid: int = msg["pid"]
        self.torch_version: str = msg["torch_version"]
        self.preload_s: float = msg["preload_s"]
        self._thread = threading.Thread(target=self._read_loop, name="fsdp-skill-zygote-reader", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        """Whether the zygote is running and accepts jobs."""
        return not self._closed and self.proc.poll() is None

    def run(
        self,
        *,
        script: str,
        workdir: str,
        rundir: str,
        world_size: int,
        timeout: float,
        env: dict[str, str],
        args: list[str] | None = None,
    ) -> RawRun:
        """Run ``script`` on ``world_size`` forked ranks (each with ``sys.argv == [script, *args]``); returns
        what the zygote's ``result`` message and the files its ranks left in ``rundir`` say (:func:`raw_run`).

        Blocks at most ``timeout`` seconds plus a margin for stack dumps and reaping.  Raises HarnessError
        when the zygote dies (LauncherDied, once whatever it left is killed and reaped, see
        :mod:`.orphans`), answers with an error or does not answer.  On KeyboardInterrupt the whole
        launcher is closed (every rank killed) and the interrupt is re-raised.
        """
        with orphans.watching():  # if a rank kills the shepherd, what it leaves comes to this process
            msg = self._run(
                script=script, workdir=workdir, rundir=rundir, world_size=world_size, timeout=timeout, env=env, args=args
            )
        return raw_run(msg, rundir)

    def _run(
        self,
        *,
        script: str,
        workdir: str,
        rundir: str,
        world_size: int,
        timeout: float,
        env: dict[str, str],
        args: list[str] | None,
    ) -> dict[str, Any]:
        job_id = f"j{next(self._ids)}-{os.getpid()}"
        slot = _Slot()
        request = {
            "type": "run",
            "id": job_id,
            "script": script,
            "workdir": workdir,
            "rundir": rundir,
            "world_size": world_size,
            "timeout": timeout,
            "env": env,
            "args": list(args or ()),
        }
        with self._lock:
            if self._closed:
                raise HarnessError("the warm launcher is closed")
            self._pending[job_id] = slot
            try:
                self._sock.sendall((json.dumps(request) + "\n").encode())
            except OSError as exc:
                self._pending.pop(job_id, None)
                raise HarnessError(f"the warm launcher is gone: {exc}{self._log_tail()}") from exc
        try:
            if not slot.event.wait(timeout + 120.0):
                raise HarnessError(f"the warm launcher did not answer within {timeout + 120.0:g} s")
        except KeyboardInterrupt:
            self.close()
            raise
        finally:
            with self._lock:
                self._pending.pop(job_id, None)
        msg = slot.msg
        if msg is None:
            if self._closing:
                raise HarnessError("the run was stopped: the warm launcher was closed (the harness is shutting down)")
            self._sweep()
            raise LauncherDied(f"the warm launcher exited during the run{self._log_tail()}")
        if not msg.get("ok"):
            raise HarnessError(f"the warm launcher could not run the job: {msg.get('error')}")
        return msg

    def _sweep(self, limit: float = 10.0) -> None:
        """After the zygote died: wait up to ``limit`` seconds for the shepherd to exit (it normally kills
        and reaps everything first), then, if it is dead but unreaped (a rank killed it), kill and reap
        what it left (:func:`orphans.sweep`)."""
        if not SHEPHERD:
            return
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            try:
                if os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    break
            except ChildProcessError:  # already reaped (another thread closed this launcher)
                break
            time.sleep(0.01)
        orphans.sweep()

    def _read_loop(self) -> None:
        try:
            for line in self._reader:
                msg = json.loads(line)
                if msg.get("type") == "result":
                    with self._lock:
                        slot = self._pending.get(msg.get("id"))
                    if slot is not None:
                        slot.msg = msg
                        slot.event.set()
                elif msg.get("type") == "bye":
                    break
        except (OSError, ValueError):
            pass
        with self._lock:
            self._closed = True
            for slot in self._pending.values():
                slot.event.set()  # msg stays None: the caller raises HarnessError

    def _log_tail(self) -> str:
        try:
            text = Path(self._log_path).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""
        return ("; zygote log: " + " | ".join(text.splitlines()[-5:])) if text else ""

    def _terminate(self) -> None:
        """Kill the zygote and every process of its jobs; returns once the shepherd (or, without one, the
        zygote) is reaped."""
        try:
            if self.proc.poll() is None:  # unreaped, so the pid (and group id) is still ours
                if SHEPHERD:
                    os.kill(self.proc.pid, signal.SIGTERM)  # the shepherd kills and reaps everything
                else:
                    os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        if self.proc.stdin is not None:
            self.proc.stdin.close()

    def close(self, timeout: float = 10.0) -> None:
        """Stop the zygote: it kills and reaps every running rank, then exits.  Idempotent."""
        with self._lock:
            already = self._closed and self.proc.poll() is not None
            self._closed = self._closing = True
        if not already:
            try:
                self._sock.sendall(b'{"type": "shutdown"}\n')
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self._terminate()  # the zygote has exited (or is stuck): the shepherd reaps whatever is left
        try:
            self._sock.close()
        except OSError:
            pass
        shutil.rmtree(self.workdir, ignore_errors=True)


_shared: dict[str, WarmLauncher] = {}  # one launcher per target interpreter (absolute path)
_shared_lock = threading.Lock()
_stopped = False  # stop() was called: no launcher starts any more in this process


def shared(python: str | None = None) -> WarmLauncher:
    """The process-wide launcher of interpreter ``python`` (default: this one), started on first use (and
    again if the previous one died).  Raises HarnessError when it cannot start."""
    key = os.path.abspath(python or sys.executable)
    with _shared_lock:
        if _stopped:
            raise HarnessError("the harness is shutting down: no new runs")
        launcher = _shared.get(key)
        if launcher is None or not launcher.alive or not os.path.isdir(launcher.workdir):
            if launcher is not None:
                launcher.close()
            launcher = _shared[key] = WarmLauncher(python=key)
        return launcher


def shutdown() -> None:
    """Close every process-wide launcher that is running (registered with atexit)."""
    with _shared_lock:
        launchers = list(_shared.values())
        _shared.clear()
    for launcher in launchers:
        launcher.close()


def stop() -> None:
    """Close every launcher and start none after (a server that shuts down): jobs in flight raise
    HarnessError once their ranks are killed and reaped."""
    global _stopped
    with _shared_lock:
        _stopped = True
    shutdown()


def _int_or_none(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


def raw_run(msg: dict[str, Any], rundir: str) -> RawRun:
    """What the zygote's ``result`` message (see :mod:`fsdp_skill.runtime.zygote`) and the files its ranks
    left in ``rundir`` (``rank{N}.log``, ``.tb``, ``.stack``, ``.exit``) say about the run."""
    ranks = []
    for r in msg["ranks"]:
        n = r["rank"]
        # A rank asked for its stack (SIGUSR1) after its faulthandler was gone (it was already exiting) dies
        # of that signal: the harness ended it, not the script.
        by_harness = r["killed_by_harness"] or (r["signal"] == "SIGUSR1" and r.get("dumped", False))
        ranks.append(
            RawRank(
                rank=n,
                exit_code=r["exit_code"],
                signal=r["signal"],
                killed_by_harness=by_harness,
                order=r.get("order"),
                log=read_text(os.path.join(rundir, f"rank{n}.log")),
                traceback=read_text(os.path.join(rundir, f"rank{n}.tb")) or None,
                stack=read_text(os.path.join(rundir, f"rank{n}.stack")) or None,
                script_exit=_int_or_none(read_text(os.path.join(rundir, f"rank{n}.exit"))),
            )
        )
    return RawRun(
        seconds=msg["seconds"],
        timed_out=msg["timed_out"],
        ranks=ranks,
        first_failure=msg["first_failure"],
        torch_version=msg.get("torch_version"),
    )


def current_pid(python: str | None = None) -> int | None:
    """Pid of the running zygote of ``python`` (default: this interpreter), or None (for tests that check
    no rank outlives its verdict)."""
    launcher = _shared.get(os.path.abspath(python or sys.executable))
    return launcher.pid if launcher is not None and launcher.alive else None


atexit.register(shutdown)
