"""Running a job once on a launcher and making its Verdict: the run's directory, the script file, the ranks'
environment, the warm or torchrun launcher, the verdict with the interpreter's facts.

    run(job, place, sha, launcher, facts) -> Verdict       one run (a warm zygote that dies gets one fresh rerun)
    environment(facts) -> dict                             the Verdict fields that name the run's environment

What to run again, what to take from the cache and what to store is decided above, in :mod:`.policy`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
import time
from typing import TYPE_CHECKING, Any

from fsdp_skill.errors import HarnessError
from fsdp_skill.runtime import dryrun, host, knobs, target
from fsdp_skill.runtime.job import Job, source_bytes
from fsdp_skill.runtime.models import Verdict
from fsdp_skill.runtime.rankenv import job_env
from fsdp_skill.runtime.report import RawRun, make_verdict

if TYPE_CHECKING:
    from fsdp_skill.runtime.warm import WarmLauncher


def environment(facts: target.Facts) -> dict[str, Any]:
    """The Verdict fields that name the environment of a run: interpreter, torch version, CUDA/NCCL, devices."""
    return {
        "python": facts.python,
        "torch_version": facts.torch_version,
        "cuda_available": facts.cuda_available,
        "nccl_available": facts.nccl_available,
        "device_count": facts.device_count,
    }


_VERSION_LINE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


def built_version(facts: target.Facts) -> str | None:
    """``torch.__version__`` of the interpreter of ``facts``, build label included (``2.6.0+cu124``), read from
    its ``torch/version.py`` without importing torch; the probe's package-metadata version (PyPI's CUDA wheels
    say ``2.6.0`` there) when that file cannot be read.  The torchrun launcher's verdicts name it, as the warm
    launcher's name what its zygote imported."""
    if facts.torch_dir:
        try:
            with open(os.path.join(facts.torch_dir, "version.py"), encoding="utf-8") as f:
                m = _VERSION_LINE.search(f.read(65536))
        except (OSError, ValueError):
            m = None
        if m:
            return m[1]
    return facts.torch_version


ZYGOTE_DIED = (
    "the warm launcher (the ranks' parent process) was killed during the run, on a fresh launcher "
    "too: does the script, or a process it starts, kill its parent process?"
)


ATTEMPTS = 2  # runs of one job on the warm launcher when its zygote dies: the first, and one on a fresh zygote


def run(job: Job, place: host.Placement, sha: str, launcher: str, facts: target.Facts) -> Verdict:
    """Run ``job`` once on ``launcher`` and make its verdict.  If the warm zygote dies during the run (a
    rank or a process it started killed it, or a concurrent job's did), the job runs once more on a fresh
    zygote; if that one dies too, the verdict is failed with that reason (:data:`ZYGOTE_DIED`), so the rest
    of a batch still gets verdicts.  Raises HarnessError when the launcher cannot run the job at all."""
    attempt = 1
    while (verdict := _attempt(job, place, sha, launcher, facts, last=attempt == ATTEMPTS)) is None:
        attempt += 1  # the zygote died: once more, on a fresh one
    return verdict


def _attempt(job: Job, place: host.Placement, sha: str, launcher: str, facts: target.Facts, *, last: bool) -> Verdict | None:
    """One run in a fresh run directory (removed afterwards unless ``$FSDP_SKILL_KEEP_RUNS`` is set); None when
    the warm zygote died and this is not the ``last`` attempt."""
    zygote = None
    if launcher == "warm":
        from fsdp_skill.runtime import warm

        zygote = warm.shared(facts.python)
    rundir = tempfile.mkdtemp(prefix="run-", dir=None if os.environ.get(knobs.KEEP_RUNS) or zygote is None else zygote.workdir)
    try:
        script, workdir = _script(job, rundir)
        env = job_env(job, place, facts, rundir)
        started, started_args = dryrun.entry(job, script, rundir)  # a dry run starts cpu_dry.py, which runs the script
        launched = dataclasses.replace(job, args=tuple(started_args))
        torch_version = facts.torch_version
        if zygote is not None:
            if os.environ.get(knobs.WARM_EXIT):  # read (and removed) by the zygote
                env[knobs.WARM_EXIT] = os.environ[knobs.WARM_EXIT]
            raw = _run_warm(zygote, launched, started, workdir, rundir, env, last=last)
            if raw is None:
                return None
            torch_version = zygote.torch_version
        else:
            raw = _run_torchrun(launched, started, workdir, rundir, env, facts.python)
            torch_version = built_version(facts)
        verdict = make_verdict(
            raw,
            script=script,
            code=job.code,
            code_sha256=sha,
            snippet_id=job.snippet_id,
            backend=place.backend,
            device=place.device,
            world_size=job.world_size,
            timeout=float(job.timeout),
            launcher=launcher,
            torch_version=torch_version,
            keep_output=job.keep_output,
        )
        verdict = verdict.model_copy(update={**environment(facts), "torch_version": verdict.torch_version})
        verdict = dryrun.finish(job, verdict, rundir)
        if job.nodes is None:
            return verdict
        from fsdp_skill.runtime.torchrun import across_nodes

        return across_nodes(verdict, job.nodes, job.world_size, raw.error)
    finally:
        if not os.environ.get(knobs.KEEP_RUNS):
            shutil.rmtree(rundir, ignore_errors=True)


def _script(job: Job, rundir: str) -> tuple[str, str]:
    """``(script, workdir)``: a user's file where it lies, run from ``job.cwd`` (default: this process's), or
    the code written to ``<rundir>/work/<filename>``, run from that directory."""
    if job.path:
        return os.path.abspath(job.path), os.path.abspath(job.cwd or os.getcwd())
    workdir = os.path.join(rundir, "work")
    os.mkdir(workdir)
    script = os.path.join(workdir, os.path.basename(job.filename))
    with open(script, "wb") as f:
        f.write(source_bytes(job.code))  # in the encoding its coding declaration names, as Python reads it back
    return script, workdir


def _run_warm(
    zygote: WarmLauncher, job: Job, script: str, workdir: str, rundir: str, env: dict[str, str], *, last: bool
) -> RawRun | None:
    """The run on the warm launcher; None when the zygote died and another attempt follows, a run with the
    :data:`ZYGOTE_DIED` error when it died on the ``last`` one."""
    from fsdp_skill.runtime import warm

    t0 = time.monotonic()
    try:
        return zygote.run(
            script=script,
            workdir=workdir,
            rundir=rundir,
            world_size=job.world_size,
            timeout=float(job.timeout),
            env=env,
            args=list(job.args),
        )
    except warm.LauncherDied:
        if not last:
            return None
        return RawRun(seconds=round(time.monotonic() - t0, 3), timed_out=False, ranks=[], first_failure=None, error=ZYGOTE_DIED)


def _run_torchrun(job: Job, script: str, workdir: str, rundir: str, env: dict[str, str], python: str) -> RawRun:
    """The run under ``python -m torch.distributed.run``; HarnessError when the interpreter cannot start."""
    from fsdp_skill.runtime.torchrun import run_torchrun

    try:
        return run_torchrun(
            script=script,
            workdir=workdir,
            rundir=rundir,
            world_size=job.world_size,
            timeout=float(job.timeout),
            env=env,
            python=python,
            args=list(job.args),
            nodes=job.nodes,
        )
    except OSError as exc:
        raise HarnessError(f"cannot run torchrun: {exc}") from exc
