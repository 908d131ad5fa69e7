"""Run the planner's child process (:mod:`child`, a file run by the target interpreter) and read its lines.

The child initialises a fake process group and may import and call the user's code (``--model``), so it
never runs in this process: it gets its own session under the runtime's shepherd on Linux (every process of the
plan killed and reaped when it ends, times out, is stopped by :func:`abort_all`, or when this process dies), the
environment without the tool's ``FSDP_SKILL_*`` variables (as the harness's ranks get it), a private
``TMPDIR`` removed afterwards, and the caller's working directory (a relative ``--model`` path resolves
there).  Its failures become errors of the tree: a model or setting it cannot plan is InvalidArgument
(exit 2, HTTP 400), a crash or a timeout HarnessError (exit 1, HTTP 503).  Only the lines the child frames with this run's nonce
are results (:mod:`fsdp_skill.runtime.framing`): what the user's factory or a ``--python`` wrapper prints is not.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from fsdp_skill.errors import HarnessError, InvalidArgument
from fsdp_skill.runtime import framing, orphans, shepherd

CHILD = str(Path(__file__).resolve().with_name("child.py"))
DEFAULT_TIMEOUT_S = 600.0
# Linux: the child runs under the runtime's shepherd (a child subreaper holding a pipe from this process): every process
# the user's factory starts, in a session of its own too, is killed with the plan, and when this process dies however
# it dies (SIGKILL included) the shepherd sees its pipe close, kills the plan and removes the plan's temporary folder
SHEPHERD = sys.platform == "linux"
SHEPHERD_SCRIPT = os.path.realpath(shepherd.__file__)
_live: set[subprocess.Popen[str]] = set()  # shepherds (or children) of plans in progress (see abort_all)
_aborted: set[subprocess.Popen[str]] = set()
_live_lock = threading.Lock()
_stopping = threading.Event()  # set by abort_all: a server shutting down starts no plan any more


def run_child(request: dict[str, Any], *, timeout: float = DEFAULT_TIMEOUT_S) -> list[dict[str, Any]]:
    """One ``ok`` result dict per setting of ``request`` (the child's JSON lines), in order.

    ``timeout``: seconds for the whole request.  Raises InvalidArgument (the model or a setting cannot be
    planned: one line from the child), HarnessError (no torch there, the child crashed or timed out).
    """
    from fsdp_skill.runtime.api import require_torch, scrubbed_env

    if _stopping.is_set():
        raise HarnessError("the plan was not started: the server is shutting down")
    facts = require_torch()
    nonce = framing.new_nonce()
    tmp = tempfile.mkdtemp(prefix="fsdp-skill-plan-")
    env = {**scrubbed_env(os.environ), "TMPDIR": tmp, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
    request_path = os.path.join(tmp, "request.json")
    cmd = [facts.python, CHILD, framing.FLAG, nonce, "--request", request_path]
    if SHEPHERD:
        cmd = [facts.python, "-I", SHEPHERD_SCRIPT, "--rmtree", tmp, "--", *cmd]  # -I: stdlib only, whatever the env
    restore = _terminate_as_exit()
    try:
        with open(request_path, "w", encoding="utf-8") as f:
            json.dump(request, f)
        with orphans.watching():  # a shepherd killed by the user's code leaves its processes to this one, not init
            proc = _start(cmd, env, out_path, err_path)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                raise HarnessError(
                    f"the plan did not finish in {timeout:g} s (a larger model or sweep needs --timeout; "
                    "a --model factory that never returns ends the same way)"
                ) from None
            finally:
                if SHEPHERD and proc.poll() is not None and proc.returncode not in (0, 3):
                    orphans.sweep()  # a dead shepherd left the rest of the plan's processes to us
                _stop(proc)  # every process of the plan, anything the user's code started included
        with _live_lock:
            if proc in _aborted:
                _aborted.discard(proc)
                raise HarnessError("the plan was stopped: the server is shutting down")
        with open(out_path) as f_out, open(err_path) as f_err:
            out, err = f_out.read(), f_err.read()
    finally:
        restore()
        shutil.rmtree(tmp, ignore_errors=True)
    return _results(framing.read(out, nonce), err, proc.returncode, facts.python, len(request["settings"]))


def _start(cmd: list[str], env: dict[str, str], out_path: str, err_path: str) -> subprocess.Popen[str]:
    """Start the plan (its shepherd on Linux, holding a pipe from this process that it never reads but for EOF) in
    a session of its own, its output to files: a process the user's factory starts (and keeps) would hold a pipe
    open, and reading it to the end would wait for that process instead of the planner."""
    with open(out_path, "w") as out_f, open(err_path, "w") as err_f:
        proc = orphans.start(  # held: never taken for a plan's orphan by a sweep
            lambda: subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE if SHEPHERD else subprocess.DEVNULL,
                stdout=out_f,
                stderr=err_f,
                env=env,
                start_new_session=True,
                text=True,
            )
        )
    with _live_lock:
        _live.add(proc)
    return proc


def abort_all() -> None:
    """Stop every plan of this process now and start none after, for a server that shuts down: each caller's
    :func:`run_child` raises HarnessError once every process of its plan is reaped (a queued one at once)."""
    _stopping.set()
    with _live_lock:
        procs = list(_live)
        _aborted.update(procs)
    for proc in procs:
        _signal(proc)


def _terminate_as_exit() -> Callable[[], object]:
    """While a plan runs in the main thread, SIGTERM raises SystemExit (so the child's session is killed on the
    way out, as on Ctrl-C); returns the function that restores the previous handler."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        return lambda: None  # the caller (serve) handles SIGTERM itself

    def _exit(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _exit)
    return lambda: signal.signal(signal.SIGTERM, previous)


def _signal(proc: subprocess.Popen[str]) -> None:
    """Ask the shepherd to end the plan (it kills and reaps every process of it, then exits), or without one SIGKILL
    the child's session; errors ignored (it may be gone)."""
    try:
        if SHEPHERD:
            os.kill(proc.pid, signal.SIGTERM)  # unreaped, so this pid is still the shepherd
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(proc: subprocess.Popen[str]) -> None:
    """End the plan and reap it; returns once ``proc`` is reaped (after SIGKILL of its session if the shepherd does
    not exit within 10 s)."""
    _signal(proc)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
    if proc.stdin is not None:
        proc.stdin.close()
    with _live_lock:
        _live.discard(proc)


def _results(framed: framing.Framed, err: str, code: int, python: str, expected: int) -> list[dict[str, Any]]:
    """The ``ok`` results of the child's framed lines (anything else it printed is the user's code's).

    Raises InvalidArgument for a failure line of kind ``model`` / ``setting``, HarnessError naming ``python`` for
    any other failure, a crash, a malformed result or fewer results than the ``expected`` settings.
    """
    results: list[dict[str, Any]] = []
    for item in framed.results:
        if isinstance(item, dict) and item.get("ok") is True:
            results.append(item)
        elif isinstance(item, dict) and item.get("ok") is False:
            if item.get("kind") in ("model", "setting"):
                raise InvalidArgument(item.get("error", "the plan failed"))
            raise HarnessError(item.get("error", "the plan failed"))
        else:
            raise HarnessError(f"the planner's child process ({python}) gave a malformed result: {str(item)[:200]}")
    if framed.malformed:
        raise HarnessError(f"the planner's child process ({python}) gave a result line that is not JSON")
    if code != 0:
        raise HarnessError(f"the planner's child process ({python}) exited with {code}: {framing.last_words(framed, err, code)}")
    if len(results) != expected:
        raise HarnessError(
            f"the planner's child process ({python}) gave {len(results)} result(s) for {expected} setting(s): "
            f"{framing.last_words(framed, err, code)}"
        )
    return results
