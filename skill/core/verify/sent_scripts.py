"""Code an agent sends, run as a script file in a named working directory that outlives the run.

Behind the MCP tool ``verify_script``, which exists only on the local stdio server started with
``fsdp-skill mcp --allow-run-scripts`` (never over HTTP).  The code is written to ``WORKDIR/FILENAME``
and run through the same path as ``fsdp-skill verify WORKDIR/FILENAME -- ARGS`` started from ``WORKDIR``
(:func:`fsdp_skill.core.verify.snippets.script_job`): the working directory is ``WORKDIR``, the script's
directory is first on ``sys.path``.  Working directories live under one session directory, so a second
call with the same ``workdir`` sees the files the first one wrote (e.g. a checkpoint to resume from).

The result carries each rank's whole output (its last :data:`OUTPUT_LIMIT_BYTES` when longer) and the files
the working directory holds after the run (:mod:`.workdirs`, which also reads them back for MCP
``read_run_file`` and keeps the session directory under its cap).  Neither ``$FSDP_SKILL_HOME`` nor any other
``FSDP_SKILL_*`` variable reaches the ranks (:func:`fsdp_skill.runtime.rankenv.job_env`), and the session
directory lies outside the state directory (:func:`check_apart`).
"""

from __future__ import annotations

import dataclasses
import errno
import os
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from fsdp_skill.core.verify.workdirs import MAX_LISTED_FILES, RunFile, list_files, make_room, plain_name, real_workdir
from fsdp_skill.errors import InvalidArgument, StateError
from fsdp_skill.runtime.job import source_bytes
from fsdp_skill.runtime.models import Verdict

if TYPE_CHECKING:  # snippets imports the runtime's harness: loaded when a script is run
    from fsdp_skill.core.verify.snippets import Verifier

OUTPUT_LIMIT_BYTES = 64 * 1024  # bytes of each rank's output a ScriptRun carries (the last ones)


class ScriptRun(BaseModel):
    """The verdict of a script sent by the caller, and where it ran."""

    workdir: str = Field(description="Absolute working directory of the run; kept for later calls with the same workdir")
    script: str = Field(description="Absolute path the code was written to and run from")
    args: list[str] = Field(description="The script's arguments (its sys.argv[1:])")
    verification: Verdict = Field(description="The verdict: passed / failed (per-rank tracebacks) / timeout / skipped")
    hints: list[str] = Field(default_factory=list, description="Section ids (or topics) that explain a failure")
    output_limit_bytes: int = Field(
        OUTPUT_LIMIT_BYTES,
        description="Bound on each rank's verification.ranks[].output in bytes; a longer output keeps its last bytes "
        "and ranks[].output_dropped_bytes counts the ones cut",
    )
    files: list[RunFile] = Field(
        default_factory=list,
        description=f"What workdir holds after the run, by path (the first {MAX_LISTED_FILES}); read one with read_run_file",
    )
    files_total: int = Field(0, description="Files and links in workdir in all; more than len(files) when the list was cut")
    files_cut: bool = Field(False, description=f"True when workdir holds more than the {MAX_LISTED_FILES} files listed")
    session_bytes: int = Field(
        0, description="Bytes under the session directory after the run (every workdir and the session HOME)"
    )
    session_limit_bytes: int = Field(
        0, description="The session directory's cap in bytes; the next run removes least recently used workdirs to stay under it"
    )
    removed_workdirs: list[str] = Field(
        default_factory=list, description="Entries of the session directory removed before this run to keep it under its cap"
    )


def check_apart(session_dir: str, state_dir: str) -> None:
    """Raise StateError when the session directory and the tool's state directory lie one inside the other
    (a working directory would then reach the verdict cache by a relative path)."""
    a, b = os.path.realpath(session_dir), os.path.realpath(state_dir)
    if os.path.commonpath([a, b]) in (a, b):
        raise StateError(
            f"the script session directory {a} and the state directory {b} overlap; point $TMPDIR or "
            f"$FSDP_SKILL_HOME elsewhere so that neither is inside the other"
        )


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
    dry_run: str | None = None,
) -> ScriptRun:
    """Write ``code`` to ``session_dir/workdir/filename`` and run it there on ``world_size`` ranks.

    ``timeout`` is in seconds; ``launcher`` is 'warm' or 'torchrun'; ``verifier`` as in
    :mod:`fsdp_skill.core.verify.snippets` (None: the runtime's); ``dry_run`` 'cpu' for a CPU dry run.  The working directory is created on first use
    and kept, with whatever the script wrote, for later calls with the same ``workdir``.  The ranks' ``HOME``
    (and ``XDG_*_HOME``) is the session's own ``session_dir/.home`` unless ``env`` sets them, so sent code
    never writes into the server user's home (its caches included).
    Before the run the session directory is kept under its cap (:func:`.workdirs.make_room`: least recently used
    working directories are removed); after it the result lists what ``workdir`` holds.
    Raises InvalidArgument for a bad name, a workdir that alone is over the cap or is not a real directory, and
    HarnessError when the run cannot happen.
    """
    from fsdp_skill.core.verify.hints import hint_for
    from fsdp_skill.core.verify.snippets import _verifier, script_job
    from fsdp_skill.core.verify.workdirs import session_limit, tree_bytes

    plain_name(workdir, "workdir")
    if not plain_name(filename, "filename").endswith(".py"):
        raise InvalidArgument(f"filename must end in .py, not {filename!r}")
    cap = session_limit()
    removed = make_room(session_dir, workdir, cap)
    where = real_workdir(session_dir, workdir)
    os.utime(where, follow_symlinks=False)  # last used now: removed last when room is needed
    path = _write_script(where, filename, code)
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
        path,
        world_size=world_size,
        backend=backend,
        timeout=timeout,
        args=args or (),
        env={**private, **(env or {})},
        cwd=where,
        dry_run=dry_run,
    )
    job = dataclasses.replace(job, keep_output=OUTPUT_LIMIT_BYTES)
    verdict = _verifier(verifier).run([job], launcher=launcher)[0]
    files, total = list_files(session_dir, workdir)
    return ScriptRun(
        workdir=where,
        script=path,
        args=list(args or ()),
        verification=verdict,
        hints=hint_for(verdict),
        files=files,
        files_total=total,
        files_cut=total > len(files),
        session_bytes=tree_bytes(session_dir),
        session_limit_bytes=cap,
        removed_workdirs=removed,
    )


def _write_script(where: str, filename: str, code: str) -> str:
    """Write ``code`` to ``where/filename`` without following a link planted under that name (the link is
    replaced by the file); InvalidArgument when a directory is in its place."""
    data = source_bytes(code)  # InvalidArgument before anything is written
    path = os.path.join(where, filename)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link: remove it (unlink does not follow) and write a file of our own
            os.unlink(path)
            fd = os.open(path, flags | os.O_EXCL, 0o644)
        elif exc.errno == errno.EISDIR:
            raise InvalidArgument(f"filename {filename!r} is a directory in this workdir; choose another filename") from None
        else:
            raise
    with os.fdopen(fd, "wb") as f:
        f.write(data)  # in the encoding its coding declaration names, as Python reads it back
    return path
