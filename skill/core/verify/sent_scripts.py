"""Code an agent sends, run as a script file in a named working directory that outlives the run.

Behind the MCP tool ``verify_script``, which exists only on the local stdio server started with
``fsdp-skill mcp --allow-run-scripts`` (never over HTTP).  The code is written to ``WORKDIR/FILENAME``
and run through the same path as ``fsdp-skill verify WORKDIR/FILENAME -- ARGS`` started from ``WORKDIR``
(:func:`fsdp_skill.core.verify.snippets.script_job`): the working directory is ``WORKDIR``, the script's
directory is first on ``sys.path``.  Working directories live under one session directory, so a second
call with the same ``workdir`` sees the files the first one wrote (e.g. a checkpoint to resume from).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from fsdp_skill.errors import InvalidArgument
from fsdp_skill.runtime.models import Verdict

if TYPE_CHECKING:  # snippets imports the runtime's harness: loaded when a script is run
    from fsdp_skill.core.verify.snippets import Verifier

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class ScriptRun(BaseModel):
    """The verdict of a script sent by the caller, and where it ran."""

    workdir: str = Field(description="Absolute working directory of the run; kept for later calls with the same workdir")
    script: str = Field(description="Absolute path the code was written to and run from")
    args: list[str] = Field(description="The script's arguments (its sys.argv[1:])")
    verification: Verdict = Field(description="The verdict: passed / failed (per-rank tracebacks) / timeout / skipped")
    hints: list[str] = Field(default_factory=list, description="Section ids (or topics) that explain a failure")


def plain_name(value: str, what: str) -> str:
    """``value`` if it is a plain file name (letters, digits, '.', '_', '-'; 1-64 characters, not starting
    with '.' or '-'), else InvalidArgument naming ``what``."""
    if not _NAME.fullmatch(value) or value in (".", ".."):
        raise InvalidArgument(
            f"{what} must be a plain name of 1-64 letters, digits, '.', '_' or '-' (not starting with '.' or '-'), not {value!r}"
        )
    return value


def run_sent_script(
    code: str,
    *,
    session_dir: str,
    workdir: str = "default",
    filename: str = "script.py",
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
    world_size: int = 2,
    backend: str = "auto",
    timeout: float = 60.0,
    launcher: str = "warm",
    verifier: Verifier | None = None,
) -> ScriptRun:
    """Write ``code`` to ``session_dir/workdir/filename`` and run it there on ``world_size`` ranks.

    ``timeout`` is in seconds; ``launcher`` is 'warm' or 'torchrun'; ``verifier`` as in
    :mod:`fsdp_skill.core.verify.snippets` (None: the runtime's).  The working directory is created on first use
    and kept, with whatever the script wrote, for later calls with the same ``workdir``.  The ranks' ``HOME``
    (and ``XDG_*_HOME``) is the session's own ``session_dir/.home`` unless ``env`` sets them, so sent code
    never writes into the server user's home (its caches included).
    Raises InvalidArgument for a bad name, HarnessError when the run cannot happen.
    """
    from fsdp_skill.core.verify.hints import hint_for
    from fsdp_skill.core.verify.snippets import _verifier, script_job

    plain_name(workdir, "workdir")
    if not plain_name(filename, "filename").endswith(".py"):
        raise InvalidArgument(f"filename must end in .py, not {filename!r}")
    where = os.path.join(session_dir, workdir)
    os.makedirs(where, exist_ok=True)
    path = os.path.join(where, filename)
    with open(path, "w", encoding="utf-8") as f:
        f.write(code)
    home = os.path.join(session_dir, ".home")  # agent-sent code gets the session's own HOME and XDG dirs
    private = {
        "HOME": home,
        **{
            f"XDG_{d}_HOME": os.path.join(home, sub)
            for d, sub in (("CACHE", ".cache"), ("CONFIG", ".config"), ("DATA", ".local/share"), ("STATE", ".local/state"))
        },
    }
    os.makedirs(home, exist_ok=True)
    job = script_job(
        path, world_size=world_size, backend=backend, timeout=timeout, args=args or (), env={**private, **(env or {})}, cwd=where
    )
    verdict = _verifier(verifier).run([job], launcher=launcher)[0]
    return ScriptRun(workdir=where, script=path, args=list(args or ()), verification=verdict, hints=hint_for(verdict))
