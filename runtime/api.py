"""The harness's public functions: run a script on a real process group and get a Verdict.

``verify_code`` runs one script, ``verify_many`` a batch on one warm launcher, ``cached_verdict`` answers
from the cache (or a host-based skip) without running anything or importing torch.

The work is done below: :mod:`.job` (what a job is, its limits), :mod:`.policy` (cache, skips, reruns),
:mod:`.launch` (one run on a launcher), :mod:`.rankenv` (the ranks' environment).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fsdp_skill.errors import InvalidArgument
from fsdp_skill.runtime import policy, target
from fsdp_skill.runtime.job import LAUNCHERS, MAX_TIMEOUT_S, MAX_WORLD_SIZE, Job, validate
from fsdp_skill.runtime.models import Verdict
from fsdp_skill.runtime.rankenv import scrubbed_env

__all__ = [
    "Job",
    "LAUNCHERS",
    "MAX_TIMEOUT_S",
    "MAX_WORLD_SIZE",
    "cached_verdict",
    "require_torch",
    "scrubbed_env",
    "stop_runs",
    "verify_code",
    "verify_many",
]


def require_torch(python: str | None = None) -> target.Facts:
    """Facts of the target interpreter (default: the selected one); raises InvalidArgument when the
    interpreter is unusable or has no torch, with one line saying how to enable verification."""
    facts = target.facts(python)
    if facts.torch_version is None:
        raise InvalidArgument(target.no_torch_reason(facts.python))
    return facts


def cached_verdict(
    code: str,
    *,
    world_size: int = 2,
    backend: str = "auto",
    requires: Sequence[str] = (),
    python: str | None = None,
    launcher: str | None = None,
) -> Verdict | None:
    """The verdict known without running anything, or None.

    ``python`` is the target interpreter (default: the selected one, :func:`fsdp_skill.runtime.target.python`).
    An ``unverified`` verdict with ``available=False`` when torch is not installed there; a ``skipped``
    verdict when the host cannot run it (e.g. ``requires=['cuda']`` with too few GPUs); else the cached
    verdict (``cached=True``) for this code, world_size, resolved backend, interpreter and its torch
    version, launcher and this process's c10d/gloo/NCCL environment (:func:`fsdp_skill.runtime.cache.outcome_env`);
    else None.  ``launcher`` None (what ``ask`` uses) takes a warm verdict, else a torchrun one; 'warm' or
    'torchrun' only that launcher's.  Never imports torch; takes milliseconds once the interpreter is
    probed.  Raises InvalidArgument for an unknown backend or launcher, a bad world_size or an unusable
    interpreter.
    """
    if launcher is not None and launcher not in LAUNCHERS:
        raise InvalidArgument(f"launcher must be one of {', '.join(LAUNCHERS)}, not {launcher!r}")
    facts = target.facts(python)
    job = Job(code=code, world_size=world_size, backend=backend, requires=tuple(requires))
    return policy.known(job, facts, launcher)


def verify_code(
    code: str,
    *,
    world_size: int = 2,
    backend: str = "auto",
    timeout: float = 60.0,
    requires: Sequence[str] = (),
    launcher: str = "warm",
    use_cache: bool = True,
    snippet_id: str | None = None,
    filename: str = "snippet.py",
    python: str | None = None,
) -> Verdict:
    """Run ``code`` as a complete script on ``world_size`` processes of a real process group.

    Each rank gets torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT, ...) and runs the
    code as ``__main__`` from ``filename`` in a fresh temp directory (its cwd).  ``backend`` is 'auto' (NCCL
    with at least world_size GPUs, else gloo on CPU; for a gloo run GPUs are hidden from the ranks), 'gloo'
    or 'nccl'.  ``timeout`` is in seconds: after it every live rank's Python stack is dumped and the run
    is killed (status ``timeout``).  ``launcher`` is 'warm' (ranks forked from a preloaded zygote, ~0.2 s)
    or 'torchrun' (``python -m torch.distributed.run --standalone``, seconds per run); a warm ``timeout`` is
    rerun under torchrun and torchrun's verdict is returned (set ``$FSDP_SKILL_CONFIRM_TIMEOUTS=0`` to
    skip that), because forked ranks can lose thread races that torchrun's ranks do not.  Warm ranks
    finalize the interpreter for real at exit (C++ static destructors too), so a crash at teardown fails
    the run as under torchrun; ``$FSDP_SKILL_WARM_EXIT=fast`` ends them with ``os._exit`` instead (~0.3 s
    faster per rank, blind to teardown crashes).  With ``use_cache``
    a cached verdict is returned (``cached=True``) instead of running; a fresh passed/failed/timeout
    verdict is always stored.  ``python`` is the interpreter that runs the ranks (the zygote, or torchrun's
    agent) and whose torch version keys the cache; default: the selected one
    (``$FSDP_SKILL_PYTHON``, else the tool's own).

    Returns a Verdict: a failing script is ``failed`` with per-rank tracebacks, never an exception.
    Raises InvalidArgument for bad arguments or an interpreter that is unusable or has no torch, and
    HarnessError when the run cannot happen at all.
    """
    job = Job(
        code=code,
        world_size=world_size,
        backend=backend,
        timeout=timeout,
        requires=tuple(requires),
        snippet_id=snippet_id,
        filename=filename,
    )
    return policy.verify(job, launcher=launcher, use_cache=use_cache, facts=require_torch(python))


def verify_many(
    jobs: list[Job],
    *,
    launcher: str = "warm",
    use_cache: bool = True,
    progress: Callable[[int, int, Verdict], None] | None = None,
    python: str | None = None,
) -> list[Verdict]:
    """Verify every job, in order, on one warm launcher of ``python`` (see :func:`verify_code`); returns
    one Verdict per job (same order).

    ``progress(done, total, verdict)`` is called after each job.  Cached and skipped jobs cost nothing;
    the zygote is started only if some job has to run.  Raises InvalidArgument / HarnessError like
    :func:`verify_code` (a HarnessError stops the batch).
    """
    for job in jobs:
        validate(job, launcher)
    facts = require_torch(python)
    out: list[Verdict] = []
    for i, job in enumerate(jobs, 1):
        verdict = policy.verify(job, launcher=launcher, use_cache=use_cache, facts=facts)
        out.append(verdict)
        if progress is not None:
            progress(i, len(jobs), verdict)
    return out


def stop_runs() -> None:
    """Kill every run in progress in this process (warm and torchrun; their callers get HarnessError once
    every process of the run is reaped) and start no warm launcher any more: for a server shutting down."""
    import sys

    torchrun = sys.modules.get("fsdp_skill.runtime.torchrun")
    if torchrun is not None:
        torchrun.abort_all()
    from fsdp_skill.runtime import warm

    warm.stop()
