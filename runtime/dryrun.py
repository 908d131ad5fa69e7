"""The parent side of a CPU dry run (``verify --cpu``): a CUDA script run on gloo ranks with CUDA mapped to the CPU.

    placement(job) -> (backend, requires)      what the host must offer: gloo, no CUDA
    entry(job, script, rundir) -> (s, args)    what the launcher starts: ``cpu_dry.py --rundir DIR -- SCRIPT ARGS``
    rank_env(job, env)                         the ranks' environment of a dry run (TORCH_DISTRIBUTED_DEBUG=DETAIL)
    finish(job, verdict, rundir) -> Verdict    the verdict marked ``dry_run``; a refusal makes it ``skipped``
    refused(verdict) / describe(verdict)       whether a dry run was refused; the words a report opens with

Each rank runs :mod:`cpu_dry` (a file-run module) as its script, which maps CUDA placement to the CPU and runs
the user's script; what it cannot map it writes to ``<rundir>/rank<N>.dryrun`` ("cannot dry-run on CPU: <what>,
at <file:line>"), read here before the run directory is removed.  Such a run is neither a pass nor a failure
of the script: ``skipped`` with that reason (the CLI's exit 2).
"""

from __future__ import annotations

import glob
import os

from fsdp_skill.runtime.job import Job
from fsdp_skill.runtime.models import Verdict

CPU_DRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpu_dry.py")
REFUSAL_PREFIX = "cannot dry-run on CPU: "  # cpu_dry.REFUSAL_PREFIX (that module is file-run: not imported here)


def placement(job: Job) -> tuple[str, tuple[str, ...]]:
    """The backend and requirements the host is asked for: a dry run needs gloo and no CUDA device."""
    requires = tuple(job.requires)
    if job.dry_run is None:
        return job.backend, requires
    return "gloo", tuple(r for r in requires if r != "cuda")


def entry(job: Job, script: str, rundir: str) -> tuple[str, list[str]]:
    """The file each rank starts and its arguments: the script itself, or for a dry run :data:`CPU_DRY` with the
    run directory (where it records refusals), then the script and its arguments."""
    if job.dry_run is None:
        return script, list(job.args)
    return CPU_DRY, ["--rundir", rundir, "--", script, *job.args]


def rank_env(job: Job, env: dict[str, str]) -> None:
    """Add to ``env`` what a dry run's ranks get: ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` (unless the user set it), so
    torch names a collective whose shape, dtype or op differs between ranks; no visible GPU."""
    if job.dry_run is None:
        return
    env.setdefault("TORCH_DISTRIBUTED_DEBUG", "DETAIL")
    env["CUDA_VISIBLE_DEVICES"] = ""


def refusals(rundir: str) -> list[tuple[int, str]]:
    """``(rank, message)`` of every refusal the ranks recorded in ``rundir``, by rank."""
    out = []
    for path in glob.glob(os.path.join(rundir, "rank*.dryrun")):
        name = os.path.basename(path)[4:-7]
        try:
            with open(path, encoding="utf-8") as f:
                first = f.readline().strip()
        except OSError:
            continue
        if name.isdigit() and first.startswith(REFUSAL_PREFIX):
            out.append((int(name), first))
    return sorted(out)


def finish(job: Job, verdict: Verdict, rundir: str) -> Verdict:
    """``verdict`` marked ``dry_run``; when a rank recorded a refusal, ``skipped`` with it as the reason (the
    script was not judged: neither passed nor failed)."""
    if job.dry_run is None:
        return verdict
    update: dict = {"dry_run": job.dry_run}
    found = refusals(rundir)
    if found:
        ranks = sorted({r for r, _ in found})
        message = found[0][1]
        update["status"] = "skipped"
        update["reason"] = f"{message} (rank {', '.join(map(str, ranks))})"
    return verdict.model_copy(update=update)


def refused(verdict: Verdict) -> bool:
    """Whether ``verdict`` is a dry run that could not happen (a rank needed what the CPU cannot stand in for)."""
    return verdict.dry_run is not None and verdict.status == "skipped" and (verdict.reason or "").startswith(REFUSAL_PREFIX)


def describe(verdict: Verdict) -> str:
    """The words a report opens with for ``verdict``'s dry run ('' for a real run)."""
    return "CPU dry run (gloo, CUDA mapped to CPU)" if verdict.dry_run == "cpu" else ""
