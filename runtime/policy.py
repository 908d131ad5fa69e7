"""The verification policy: when a verdict comes from the cache or the host, when a run is repeated, what is stored.

    known(job, facts, launcher) -> Verdict | None     the verdict known without running (no torch there, skip, cache)
    verify(job, launcher=, use_cache=, facts=)        the verdict of one job: cached, skipped, or run (:mod:`.launch`)
    failed_only_in_teardown(verdict)                  whether a failure is only torch's teardown race (one rerun)

Rules: a cached timeout is reused only for a timeout no longer than its own; a job with its own script file,
environment, or several nodes is never stored; a knowledge snippet that failed only in interpreter teardown
runs once more; a warm timeout is rerun under torchrun (``$FSDP_SKILL_CONFIRM_TIMEOUTS=0`` turns that off),
whose verdict is the one reported; a user's own script (``Job.debug``) skips the cache and both reruns.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

from fsdp_skill.errors import InvalidArgument
from fsdp_skill.runtime import cache, dryrun, host, knobs, launch, target
from fsdp_skill.runtime.job import LAUNCHERS, Job, validate
from fsdp_skill.runtime.launch import environment
from fsdp_skill.runtime.models import Verdict


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _place(job: Job, facts: target.Facts) -> host.Placement:
    """Where ``job`` runs on this host (a dry run: gloo, no CUDA needed)."""
    backend, requires = dryrun.placement(job)
    return host.resolve(backend, job.world_size, requires, facts.python)


def skipped(code_sha: str, job: Job, place: host.Placement, facts: target.Facts) -> Verdict:
    """The verdict of a job this host cannot run (``place.skip`` says why): ``skipped``, never run."""
    return Verdict(
        status="skipped",
        reason=place.skip,
        snippet_id=job.snippet_id,
        code_sha256=code_sha,
        backend=place.backend,
        world_size=job.world_size,
        device=place.device,
        seconds=0.0,
        launcher=None,
        checked_at=_now(),
        checks=job.checks,
        dry_run=job.dry_run,
        **environment(facts),
    )


def unavailable(code_sha: str, job: Job, facts: target.Facts) -> Verdict:
    """The verdict of any job in an environment without torch: not run, ``available=False``, how to enable it."""
    return Verdict(
        status="unverified",
        available=False,
        reason=target.no_torch_reason(facts.python),
        snippet_id=job.snippet_id,
        code_sha256=code_sha,
        world_size=job.world_size,
        checks=job.checks,
        **environment(facts),
    )


def key(sha: str, job: Job, place: host.Placement, facts: target.Facts, launcher: str) -> cache.VerdictKey:
    """The cache key of ``job`` on ``launcher`` in this environment (see :class:`fsdp_skill.runtime.cache.VerdictKey`);
    InvalidArgument for an interpreter without torch (its callers answer that case before)."""
    if facts.torch_version is None:
        raise InvalidArgument(target.no_torch_reason(facts.python))
    return cache.VerdictKey(
        sha, job.world_size, place.backend, facts.torch_version, facts.python, launcher, cache.outcome_env(), job.dry_run
    )


def known(job: Job, facts: target.Facts, launcher: str | None) -> Verdict | None:
    """The verdict of ``job`` known without running anything (see :func:`fsdp_skill.runtime.api.cached_verdict`),
    or None; ``launcher`` None takes a warm verdict, else a torchrun one."""
    sha = cache.code_sha256(job.code)
    if facts.torch_version is None:
        return unavailable(sha, job, facts)
    place = _place(job, facts)
    if place.skip:
        return skipped(sha, job, place, facts)
    for name in (launcher,) if launcher else LAUNCHERS:
        hit = cache.load(key(sha, job, place, facts, name))
        if hit is not None:
            return hit
    return None


def verify(job: Job, *, launcher: str, use_cache: bool, facts: target.Facts) -> Verdict:
    """The verdict of ``job`` on ``launcher`` under the rules of the module docstring; raises InvalidArgument
    for a bad job and HarnessError when a run cannot happen."""
    validate(job, launcher)
    place = _place(job, facts)
    sha = cache.code_sha256(job.code)
    if place.skip:
        return skipped(sha, job, place, facts)
    if job.nodes is not None:  # a multi-node verdict is about that job, never reused for a single-host run
        return launch.run(job, place, sha, launcher, facts).model_copy(update={"checks": job.checks})
    k = key(sha, job, place, facts, launcher)
    if use_cache and not job.debug:
        hit = cache.load(k)
        # A timeout recorded under a shorter timeout says nothing about a longer one.
        if hit is not None and not (hit.status == "timeout" and (hit.seconds or 0) < job.timeout):
            return hit.model_copy(update={"snippet_id": job.snippet_id, "checks": job.checks})
    verdict = launch.run(job, place, sha, launcher, facts)
    if not job.debug and failed_only_in_teardown(verdict):
        # torch 2.13's gloo teardown race (RankResult.teardown_crash) says nothing about the snippet, whose
        # every rank finished; one more run decides, and the verdict keeps the first run's reason.
        first = (verdict.reason or "").splitlines()[0]
        again = launch.run(job, place, sha, launcher, facts)
        verdict = again.model_copy(
            update={
                "teardown_retries": 1,
                "reason": (f"{again.reason}; this is a second run: the first failed only in interpreter teardown ({first})"),
            }
        )
    if (
        verdict.status == "timeout"
        and launcher == "warm"
        and not job.debug
        and os.environ.get(knobs.CONFIRM_TIMEOUTS, "1") != "0"
    ):
        verdict = confirm(job, place, sha, verdict, facts)
    verdict = verdict.model_copy(update={"checks": job.checks})
    if not (job.path or job.env):  # a script run in place also depends on its directory, cwd and arguments
        cache.store(k, verdict)
    return verdict


def failed_only_in_teardown(verdict: Verdict) -> bool:
    """Whether a failed run's only failures are teardown crashes (RankResult.teardown_crash): every rank
    reported, at least one crashed in teardown, and each other one exited 0 or was stopped by the launcher
    because of that crash."""
    ranks = verdict.ranks
    return (
        verdict.status == "failed"
        and len(ranks) == verdict.world_size
        and any(r.teardown_crash for r in ranks)
        and all(r.teardown_crash or r.killed_by_harness or (r.exit_code == 0 and r.signal is None) for r in ranks)
    )


def confirm(job: Job, place: host.Placement, sha: str, warm: Verdict, facts: target.Facts) -> Verdict:
    """Rerun a warm timeout under torchrun, whose verdict is the one reported.

    Forked ranks start in milliseconds with torch already imported, which changes thread timing: a
    latent race can hang there and not under torchrun (torch 2.13: a gloo worker thread that needs the
    GIL while the main thread, holding it, joins that thread in ProcessGroupGloo's destructor, after
    DDP).  A hang is reported only when torch's own launcher hangs too.
    """
    confirmed = launch.run(job, place, sha, "torchrun", facts)
    if confirmed.status == "timeout":
        note = "the warm launcher timed out as well"
    else:
        note = f"the warm launcher had timed out ({warm.reason}); torchrun is authoritative"
    reason = f"{confirmed.reason} [{note}]" if confirmed.reason else note
    seconds = round((warm.seconds or 0) + (confirmed.seconds or 0), 3)
    return confirmed.model_copy(update={"reason": reason, "seconds": seconds})
