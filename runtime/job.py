"""What one verification is: :class:`Job` (a script and how to run it) and the limits its arguments must keep.

    Job(code, world_size=2, backend="auto", timeout=60.0, ...)   one script to verify (:func:`.api.verify_many`)
    validate(job, launcher)                                        InvalidArgument, one line, for a bad job
    MAX_TIMEOUT_S, MAX_WORLD_SIZE, LAUNCHERS                       the limits (the CLI checks its options against them)

Standard library only (and the error tree), so a caller can build jobs without importing the harness.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fsdp_skill.errors import InvalidArgument

if TYPE_CHECKING:
    from fsdp_skill.runtime.torchrun import Nodes

LAUNCHERS = ("warm", "torchrun")
DRY_RUNS = ("cpu",)  # Job.dry_run: 'cpu' runs a CUDA script on gloo ranks with CUDA mapped to the CPU (:mod:`.dryrun`)
MAX_TIMEOUT_S = 86400.0  # a run's timeout is at most a day (seconds)
MAX_WORLD_SIZE = 64  # ranks started on this host by one run (with several nodes: per node)


@dataclass(frozen=True)
class Job:
    """One script to verify in a batch (:func:`fsdp_skill.runtime.api.verify_many`); fields as in
    :func:`fsdp_skill.runtime.api.verify_code`."""

    code: str
    world_size: int = 2
    backend: str = "auto"
    timeout: float = 60.0
    requires: Sequence[str] = field(default_factory=tuple)
    snippet_id: str | None = None
    filename: str = "snippet.py"
    # A user's own script under debugging: always run it (no cache lookup) and report a warm timeout as
    # seen, without the torchrun confirmation rerun.
    debug: bool = False
    # A script file to run where it is (``path``, its directory first on sys.path, as ``torchrun path``
    # does) from the working directory ``cwd`` (default: the caller's); ``code`` must be its text.
    # Without ``path`` the code is written to a fresh private directory and run from there.
    path: str | None = None
    cwd: str | None = None
    # The script's own arguments (its sys.argv[1:], as after ``torchrun ... script.py``), and variables
    # added to the ranks' environment (names starting FSDP_SKILL_ are dropped).  A job with either is
    # never stored in the verdict cache, whose key covers neither.
    args: Sequence[str] = field(default_factory=tuple)
    env: Mapping[str, str] = field(default_factory=dict)
    # Bytes of each rank's whole output (its last ones) to return in RankResult.output; 0: only output_tail.
    keep_output: int = 0
    # What the script asserts (a knowledge snippet's fence 'checks'); copied onto its verdict.
    checks: str | None = None
    # Several hosts (torchrun launcher only): this node's place in the job; world_size is then the
    # processes of this node.  Such a run is never answered from nor stored in the cache.
    nodes: Nodes | None = None
    # A dry run ('cpu': every rank runs the script on gloo with CUDA placement mapped to the CPU, see
    # :mod:`fsdp_skill.runtime.dryrun`), or None for a real run.  Part of the verdict cache key.
    dry_run: str | None = None


_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")  # PEP 263, on line 1 or 2


def source_bytes(code: str) -> bytes:
    """``code`` as the bytes of a ``.py`` file that Python reads back as ``code``: encoded in the encoding its PEP 263
    coding declaration names (``# -*- coding: latin-1 -*-`` on line 1 or 2), else UTF-8.  Raises InvalidArgument
    (one line) when the text has a character that the declared encoding cannot hold; a name Python does not know
    is left to Python, whose SyntaxError the run then reports."""
    raw = code.encode("utf-8", "surrogateescape")
    for line in raw.splitlines()[:2]:
        m = _CODING.match(line)
        if m:
            name = m[1].decode("ascii", "replace")
            try:
                return code.encode(name)
            except LookupError:
                return raw
            except UnicodeEncodeError as exc:
                raise InvalidArgument(
                    f"the code declares coding {name!r}, which cannot hold {code[exc.start]!r} "
                    f"(line {code.count(chr(10), 0, exc.start) + 1}): "
                    "drop the coding line or change the text"
                ) from None
        if not line.lstrip().startswith(b"#"):
            break  # the declaration counts only on line 2 after a comment line 1 (PEP 263)
    return raw


def validate(job: Job, launcher: str) -> None:
    """Raise InvalidArgument (one line) for an unknown launcher or a job whose arguments cannot run: a
    timeout outside (0, MAX_TIMEOUT_S] seconds, a world_size outside 1..MAX_WORLD_SIZE, code that is not a
    str, node settings with the warm launcher or that do not go together, a filename that is not ``*.py``,
    script arguments that are not strings (or hold NUL) or are given without a script run in place, environment
    variables no environment can hold (a name with ``=`` or NUL, a value with NUL), an unknown dry run or one with
    NCCL or several nodes."""
    if launcher not in LAUNCHERS:
        raise InvalidArgument(f"launcher must be one of {', '.join(LAUNCHERS)}, not {launcher!r}")
    if not isinstance(job.timeout, (int, float)) or not 0 < job.timeout <= MAX_TIMEOUT_S:
        raise InvalidArgument(
            f"timeout must be a positive number of seconds, at most {MAX_TIMEOUT_S:g} (a day), not {job.timeout!r}"
        )
    if not isinstance(job.world_size, int) or not 1 <= job.world_size <= MAX_WORLD_SIZE:
        raise InvalidArgument(
            f"world_size must be an integer from 1 to {MAX_WORLD_SIZE} (ranks on this host), not {job.world_size!r}"
        )
    if not isinstance(job.code, str):
        raise InvalidArgument("code must be a str")
    if not job.path:
        source_bytes(job.code)  # written to a file for the run: its coding declaration must hold the text
    if job.nodes is not None:
        if launcher != "torchrun":
            raise InvalidArgument(f"several nodes (--nnodes {job.nodes.nnodes}) need --launcher torchrun, not {launcher}")
        job.nodes.validate()
    name = os.path.basename(job.filename or "snippet.py")
    if name in ("", ".", "..") or not name.endswith(".py"):
        raise InvalidArgument(f"filename must name a .py file, not {job.filename!r}")
    if isinstance(job.args, str) or not all(isinstance(a, str) and "\0" not in a for a in job.args):
        raise InvalidArgument("script arguments must be a list of strings without NUL characters")
    if job.args and not job.path:
        raise InvalidArgument("script arguments are only for a script run in place (a PATH.py)")
    _validate_env(job.env)
    _validate_dry_run(job)


def _validate_env(env: object) -> None:
    """InvalidArgument for variables no process environment can hold: a name that is empty or holds ``=`` or NUL, a
    value that holds NUL (os.environ refuses them in the rank, which then failed as if the script had)."""
    if not isinstance(env, Mapping):
        raise InvalidArgument("env must be a mapping of variable names to values")
    for name, value in env.items():
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise InvalidArgument(f"environment variable name {name!r} cannot be set: it must be non-empty, without '=' or NUL")
        if not isinstance(value, str) or "\0" in value:
            raise InvalidArgument(f"environment variable {name}: its value must be a string without NUL characters")


def _validate_dry_run(job: Job) -> None:
    """InvalidArgument for an unknown dry run or one that cannot go with the job (NCCL, several nodes)."""
    if job.dry_run is None:
        return
    if job.dry_run not in DRY_RUNS:
        raise InvalidArgument(f"dry_run must be one of {', '.join(DRY_RUNS)} or none, not {job.dry_run!r}")
    if job.backend == "nccl":
        raise InvalidArgument("a CPU dry run runs on gloo: backend nccl cannot go with it (--cpu)")
    if job.nodes is not None:
        raise InvalidArgument(f"a CPU dry run runs on this host: --nnodes {job.nodes.nnodes} cannot go with --cpu")
