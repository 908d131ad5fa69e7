"""Typed results of the verification harness.

These records cross every boundary (CLI ``--json``, HTTP, MCP), so each field carries a description (its
attribute docstring, published in the JSON schemas; see :mod:`fsdp_skill.records`).  Importing this module is
cheap: it needs the standard library only, never pydantic or torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from fsdp_skill.records import Record

Status = Literal["passed", "failed", "timeout", "skipped", "unverified"]


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class RankResult(Record):
    """What one rank (one OS process) of a verification run did."""

    rank: int
    """Global rank of the process, 0 .. world_size-1"""
    exit_code: int | None = None
    """Process exit code; None if it was killed by a signal or never exited"""
    signal: str | None = None
    """Name of the signal that ended the process, e.g. 'SIGKILL'"""
    killed_by_harness: bool = False
    """True when the harness (or torchrun) killed this rank because another rank failed or the run timed out"""
    output_tail: str = ""
    (
        "Last lines of the rank's stdout and stderr, interleaved as written (frames of the harness that launched "
        "the script removed)"
    )
    output: str | None = None
    (
        "The rank's whole stdout and stderr, interleaved as written (harness frames removed), for a run that asked "
        "for it (a script an agent sends over MCP: up to 64 KiB); when longer, its last bytes within that bound, and "
        "output_dropped_bytes says how many earlier bytes were cut.  None for other runs"
    )
    output_dropped_bytes: int = 0
    """Bytes cut from the start of output to keep it within its bound; 0 when output is whole (or None)"""
    traceback: str | None = None
    """Python traceback the rank printed, if any (harness frames removed)"""
    stack: str | None = None
    """faulthandler dump of the rank's Python stack taken at the timeout"""
    blocked_at: str | None = None
    """Where a hung rank was waiting, e.g. 'all_reduce at script.py:14'"""
    error: str | None = None
    (
        "The rank's own error, whole: an uncaught exception's 'Type: message' (every line of it), or for a native "
        "crash the C++ message ('what()') or the fatal error"
    )
    error_at: str | None = None
    (
        "Where in the user's script the rank failed: 'script.py:5' for an exception, 'all_gather at script.py:13' "
        "for a native crash"
    )
    teardown_crash: bool = False
    (
        "True when the rank finished its script with exit code 0 and then died while the interpreter shut down "
        "(torch 2.13's gloo teardown race: 'terminate called without an active exception'); what it computed and "
        "printed was complete"
    )


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class Verdict(Record):
    """Outcome of running one script on a real multi-process process group.

    ``status`` is ``passed`` only when every rank exited 0.  ``skipped`` carries the ``reason``
    (e.g. the snippet needs CUDA and this host has none) and means the code was not run.
    ``unverified`` means verification was not asked for (``--no-verify``), or, with ``available=False``,
    that it cannot happen in the target environment (no torch there).
    """

    status: Status
    """passed | failed | timeout | skipped | unverified"""
    reason: str | None = None
    (
        "Explanation: skip reason, failing rank, hang location.  The first line is the summary; a multi-line error "
        "message follows whole on the next lines"
    )
    snippet_id: str | None = None
    """Knowledge snippet id, or None for a user's own script"""
    code_sha256: str | None = None
    """SHA-256 of the exact code bytes that were (or would be) run"""
    backend: str | None = None
    """Process-group backend used: 'gloo' or 'nccl'"""
    world_size: int | None = None
    """Number of ranks launched"""
    device: str | None = None
    """'cpu' or 'cuda' (with device count), the device kind the ranks used"""
    torch_version: str | None = None
    """torch.__version__ of the interpreter that ran the ranks"""
    python: str | None = None
    (
        "Absolute path of the Python interpreter that ran (or would run) the ranks: the tool's own, or the one "
        "given with --python / $FSDP_SKILL_PYTHON"
    )
    cuda_available: bool | None = None
    """Whether that interpreter's torch sees a CUDA device (a CUDA build and at least one visible device)"""
    nccl_available: bool | None = None
    """Whether that interpreter's torch is built with NCCL"""
    device_count: int | None = None
    """CUDA devices visible to that interpreter's ranks (honoring CUDA_VISIBLE_DEVICES; 0 on a CPU-only build)"""
    available: bool = True
    """False when verification is impossible in that environment (torch is not installed there); 'reason' says how to enable it"""
    seconds: float | None = None
    """Wall time of the run in seconds, launch to last rank reaped"""
    launcher: str | None = None
    """'warm' (forked from a preloaded parent) or 'torchrun'"""
    checks: str | None = None
    """What the script asserts (knowledge snippets): 'reference', 'agree', 'raises' or 'runs'; None for a user's script"""
    nnodes: int | None = None
    (
        "Hosts of a multi-node torchrun run (--nnodes); None on one host.  Then world_size is the global world "
        "size (nnodes x processes per node) and ranks holds only the ranks this host ran, under their global "
        "numbers"
    )
    dry_run: str | None = None
    (
        "'cpu' for a CPU dry run (verify --cpu: the script ran on gloo ranks with CUDA placement mapped to the CPU; "
        "never cached as, nor answered for, a real run); None for a real run"
    )
    ranks: list[RankResult] = field(default_factory=list)
    """Per-rank results, ordered by rank"""
    cached: bool = False
    """True when this verdict came from the cache instead of a fresh run"""
    checked_at: str | None = None
    """UTC ISO-8601 time the run finished"""
    teardown_retries: int = field(default=0, metadata={"ge": 0})
    (
        "Runs of this knowledge snippet rerun because they failed only by crashing in interpreter teardown after "
        "every rank's script exited 0 (see RankResult.teardown_crash); the verdict is that of the last run, and "
        "'reason' quotes the first"
    )
