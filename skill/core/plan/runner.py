"""Run the planner's child process (:mod:`child`, a file run by the target interpreter) and read its lines.

The child initialises a fake process group and may import and call the user's code (``--model``), so it
never runs in this process: it gets its own session (killed as a group on timeout or error), the
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
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from fsdp_skill.errors import HarnessError, InvalidArgument
from fsdp_skill.runtime import framing

CHILD = str(Path(__file__).resolve().with_name("child.py"))
DEFAULT_TIMEOUT_S = 600.0


def run_child(request: dict[str, Any], *, timeout: float = DEFAULT_TIMEOUT_S) -> list[dict[str, Any]]:
    """One ``ok`` result dict per setting of ``request`` (the child's JSON lines), in order.

    ``timeout``: seconds for the whole request.  Raises InvalidArgument (the model or a setting cannot be
    planned: one line from the child), HarnessError (no torch there, the child crashed or timed out).
    """
    from fsdp_skill.runtime.api import require_torch, scrubbed_env

    facts = require_torch()
    nonce = framing.new_nonce()
    tmp = tempfile.mkdtemp(prefix="fsdp-skill-plan-")
    env = {**scrubbed_env(os.environ), "TMPDIR": tmp, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
    restore = _terminate_as_exit()
    try:
        # output to files, not pipes: a process the user's factory starts (and keeps) would hold a pipe open, and
        # reading it to the end would wait for that process instead of the planner
        with open(out_path, "w") as out_f, open(err_path, "w") as err_f:
            proc = subprocess.Popen(
                [facts.python, CHILD, framing.FLAG, nonce],
                stdin=subprocess.PIPE,
                stdout=out_f,
                stderr=err_f,
                env=env,
                start_new_session=True,
                text=True,
            )
        try:
            try:
                if proc.stdin is not None:  # always: stdin=PIPE
                    proc.stdin.write(json.dumps(request))
                    proc.stdin.close()
            except BrokenPipeError:
                pass  # the child died before reading: its exit code and stderr say why
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise HarnessError(
                f"the plan did not finish in {timeout:g} s (a larger model or sweep needs --timeout; "
                "a --model factory that never returns ends the same way)"
            ) from None
        finally:
            _kill(proc)  # the planner's whole session: anything the user's code started goes with it
        with open(out_path) as f_out, open(err_path) as f_err:
            out, err = f_out.read(), f_err.read()
    finally:
        restore()
        shutil.rmtree(tmp, ignore_errors=True)
    return _results(framing.read(out, nonce), err, proc.returncode, facts.python, len(request["settings"]))


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


def _kill(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


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
