"""Running a job once on a launcher and making its Verdict: the run's directory, the script file, the ranks'
environment, the warm or torchrun launcher, the verdict with the interpreter's facts.

    run(job, place, sha, launcher, facts) -> Verdict       one run (a warm zygote that dies gets one fresh rerun)
    environment(facts) -> dict                             the Verdict fields that name the run's environment

What to run again, what to take from the cache and what to store is decided above, in :mod:`.policy`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from fsdp_skill.errors import HarnessError
from fsdp_skill.runtime import host, target
from fsdp_skill.runtime.job import Job
from fsdp_skill.runtime.models import Verdict
from fsdp_skill.runtime.rankenv import job_env
from fsdp_skill.runtime.report import RawRun, make_verdict

KEEP_ENV = "FSDP_SKILL_KEEP_RUNS"  # set to keep each run's directory (script, per-rank logs) for debugging
WARM_EXIT_ENV = "FSDP_SKILL_WARM_EXIT"  # 'fast': warm ranks end with os._exit (see verify_code)


def environment(facts: target.Facts) -> dict:
    """The Verdict fields that name the environment of a run: interpreter, torch version, CUDA/NCCL, devices."""
    return {
        "python": facts.python,
        "torch_version": facts.torch_version,
        "cuda_available": facts.cuda_available,
        "nccl_available": facts.nccl_available,
        "device_count": facts.device_count,
    }


ZYGOTE_DIED = (
    "the warm launcher (the ranks' parent process) was killed during the run, on a fresh launcher "
    "too: does the script, or a process it starts, kill its parent process?"
)


def run(job: Job, place: host.Placement, sha: str, launcher: str, facts: target.Facts, attempt: int = 1) -> Verdict:
    """Run ``job`` once on ``launcher`` and make its verdict.  If the warm zygote dies during the run (a
    rank or a process it started killed it, or a concurrent job's did), the job runs once more on a fresh
    zygote; if that one dies too, the verdict is failed with that reason, so the rest of a batch still
    gets verdicts."""
    if launcher == "warm":
        from fsdp_skill.runtime import warm

        zygote = warm.shared(facts.python)
        base = None if os.environ.get(KEEP_ENV) else zygote.workdir
    else:
        zygote, base = None, None
    rundir = tempfile.mkdtemp(prefix="run-", dir=base)
    try:
        if job.path:
            script, workdir = os.path.abspath(job.path), os.path.abspath(job.cwd or os.getcwd())
        else:
            workdir = os.path.join(rundir, "work")
            os.mkdir(workdir)
            script = os.path.join(workdir, os.path.basename(job.filename))
            with open(script, "w", encoding="utf-8") as f:
                f.write(job.code)
        env = job_env(job, place, facts, rundir)
        if zygote is not None and os.environ.get(WARM_EXIT_ENV):  # read (and removed) by the zygote
            env[WARM_EXIT_ENV] = os.environ[WARM_EXIT_ENV]
        torch_version = facts.torch_version
        if zygote is not None:
            t0 = time.monotonic()
            try:
                msg = zygote.run(
                    script=script,
                    workdir=workdir,
                    rundir=rundir,
                    world_size=job.world_size,
                    timeout=float(job.timeout),
                    env=env,
                    args=list(job.args),
                )
                raw = warm.raw_run(msg, rundir)
            except warm.LauncherDied:
                if attempt == 1:
                    raw = None  # run again (after this run's directory is removed)
                else:
                    raw = RawRun(
                        seconds=round(time.monotonic() - t0, 3), timed_out=False, ranks=[], first_failure=None, error=ZYGOTE_DIED
                    )
            torch_version = zygote.torch_version
        else:
            from fsdp_skill.runtime.torchrun import run_torchrun

            try:
                raw = run_torchrun(
                    script=script,
                    workdir=workdir,
                    rundir=rundir,
                    world_size=job.world_size,
                    timeout=float(job.timeout),
                    env=env,
                    python=facts.python,
                    args=list(job.args),
                    nodes=job.nodes,
                )
            except OSError as exc:
                raise HarnessError(f"cannot run torchrun: {exc}") from exc
        if raw is not None:
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
            )
            verdict = verdict.model_copy(update={**environment(facts), "torch_version": verdict.torch_version})
            if job.nodes is None:
                return verdict
            from fsdp_skill.runtime.torchrun import across_nodes

            return across_nodes(verdict, job.nodes, job.world_size, raw.error)
    finally:
        if not os.environ.get(KEEP_ENV):
            shutil.rmtree(rundir, ignore_errors=True)
    return run(job, place, sha, launcher, facts, attempt=attempt + 1)  # the zygote died: once more
