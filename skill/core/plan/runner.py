"""Run the planner's child process (:mod:`child`, a file run by the target interpreter) and read its lines.

The child initialises a fake process group and may import and call the user's code (``--model``), so it
never runs in this process: it gets its own session (killed as a group on timeout or error), the
environment without the tool's ``FSDP_SKILL_*`` variables (as the harness's ranks get it), a private
``TMPDIR`` removed afterwards, and the caller's working directory (a relative ``--model`` path resolves
there).  Its failures become errors of the tree: a model or setting it cannot plan is InvalidArgument
(exit 2, HTTP 400), a crash or a timeout HarnessError (exit 1, HTTP 503).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from fsdp_skill.errors import HarnessError, InvalidArgument

CHILD = str(Path(__file__).resolve().with_name("child.py"))
DEFAULT_TIMEOUT_S = 600.0


def run_child(request: dict, *, timeout: float = DEFAULT_TIMEOUT_S) -> list[dict]:
    """One ``ok`` result dict per setting of ``request`` (the child's JSON lines), in order.

    ``timeout``: seconds for the whole request.  Raises InvalidArgument (the model or a setting cannot be
    planned: one line from the child), HarnessError (no torch there, the child crashed or timed out).
    """
    from fsdp_skill.runtime.api import require_torch, scrubbed_env

    facts = require_torch()
    tmp = tempfile.mkdtemp(prefix="fsdp-skill-plan-")
    env = {**scrubbed_env(os.environ), "TMPDIR": tmp, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    try:
        proc = subprocess.Popen([facts.python, CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, start_new_session=True, text=True)
        try:
            out, err = proc.communicate(json.dumps(request), timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise HarnessError(f"the plan did not finish in {timeout:g} s (a larger model or sweep needs --timeout)") from None
        except BaseException:
            _kill(proc)
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _results(out, err, proc.returncode)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.communicate()


def _results(out: str, err: str, code: int) -> list[dict]:
    results = []
    for line in out.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # the user's code printed something
        if isinstance(item, dict) and item.get("ok") is True:
            results.append(item)
        elif isinstance(item, dict) and item.get("ok") is False:
            if item.get("kind") in ("model", "setting"):
                raise InvalidArgument(item.get("error", "the plan failed"))
            raise HarnessError(item.get("error", "the plan failed"))
    if code != 0:
        last = next((ln for ln in reversed(err.strip().splitlines()) if ln.strip()), "no output")
        raise HarnessError(f"the planner's child process exited with {code}: {last}")
    return results
