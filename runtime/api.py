"""The harness's public functions: run a script on a real process group and get a Verdict.

``verify_code`` runs one script, ``verify_many`` a batch on one warm launcher, ``cached_verdict`` answers
from the cache (or a host-based skip) without running anything or importing torch.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from fsdp_skill.errors import HarnessError, InvalidArgument
from fsdp_skill.runtime import cache, host, target
from fsdp_skill.runtime.models import Verdict
from fsdp_skill.runtime.report import RawRank, RawRun, make_verdict, read_text
from fsdp_skill.runtime.torchrun import Nodes

LAUNCHERS = ("warm", "torchrun")
MAX_TIMEOUT_S = 86400.0  # a run's timeout is at most a day (seconds)
MAX_WORLD_SIZE = 64  # ranks started on this host by one run (with several nodes: per node)
KEEP_ENV = "FSDP_SKILL_KEEP_RUNS"  # set to keep each run's directory (script, per-rank logs) for debugging
WARM_EXIT_ENV = "FSDP_SKILL_WARM_EXIT"  # 'fast': warm ranks end with os._exit (see verify_code)
CONFIRM_ENV = "FSDP_SKILL_CONFIRM_TIMEOUTS"  # '0' reports warm timeouts without rerunning them under torchrun


@dataclass(frozen=True)
class Job:
    """One script to verify in a batch (:func:`verify_many`); fields as in :func:`verify_code`."""

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
    # What the script asserts (a knowledge snippet's fence 'checks'); copied onto its verdict.
    checks: str | None = None
    # Several hosts (torchrun launcher only): this node's place in the job; world_size is then the
    # processes of this node.  Such a run is never answered from nor stored in the cache.
    nodes: Nodes | None = None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def environment(facts: target.Facts) -> dict:
    """The Verdict fields that name the environment of a run: interpreter, torch version, CUDA/NCCL, devices."""
    return {
        "python": facts.python,
        "torch_version": facts.torch_version,
        "cuda_available": facts.cuda_available,
        "nccl_available": facts.nccl_available,
        "device_count": facts.device_count,
    }


def _skipped(code_sha: str, job: Job, place: host.Placement, facts: target.Facts) -> Verdict:
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
        **environment(facts),
    )


def _unavailable(code_sha: str, job: Job, facts: target.Facts) -> Verdict:
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


def require_torch(python: str | None = None) -> target.Facts:
    """Facts of the target interpreter (default: the selected one); raises InvalidArgument when the
    interpreter is unusable or has no torch, with one line saying how to enable verification."""
    facts = target.facts(python)
    if facts.torch_version is None:
        raise InvalidArgument(target.no_torch_reason(facts.python))
    return facts


def _check(job: Job, launcher: str) -> None:
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


def cached_verdict(
    code: str, *, world_size: int = 2, backend: str = "auto", requires=(), python: str | None = None, launcher: str | None = None
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
    sha = cache.code_sha256(code)
    if facts.torch_version is None:
        return _unavailable(sha, job, facts)
    place = host.resolve(backend, world_size, tuple(requires), facts.python)
    if place.skip:
        return _skipped(sha, job, place, facts)
    for name in (launcher,) if launcher else LAUNCHERS:
        hit = cache.load(_key(sha, job, place, facts, name))
        if hit is not None:
            return hit
    return None


def _key(sha: str, job: Job, place: host.Placement, facts: target.Facts, launcher: str) -> cache.VerdictKey:
    return cache.VerdictKey(sha, job.world_size, place.backend, facts.torch_version, facts.python, launcher, cache.outcome_env())


def verify_code(
    code: str,
    *,
    world_size: int = 2,
    backend: str = "auto",
    timeout: float = 60.0,
    requires=(),
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
    return _verify(job, launcher=launcher, use_cache=use_cache, facts=require_torch(python))


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
        _check(job, launcher)
    facts = require_torch(python)
    out: list[Verdict] = []
    for i, job in enumerate(jobs, 1):
        verdict = _verify(job, launcher=launcher, use_cache=use_cache, facts=facts)
        out.append(verdict)
        if progress is not None:
            progress(i, len(jobs), verdict)
    return out


def _verify(job: Job, *, launcher: str, use_cache: bool, facts: target.Facts) -> Verdict:
    _check(job, launcher)
    place = host.resolve(job.backend, job.world_size, tuple(job.requires), facts.python)
    sha = cache.code_sha256(job.code)
    if place.skip:
        return _skipped(sha, job, place, facts)
    if job.nodes is not None:  # a multi-node verdict is about that job, never reused for a single-host run
        return _run(job, place, sha, launcher, facts).model_copy(update={"checks": job.checks})
    key = _key(sha, job, place, facts, launcher)
    if use_cache and not job.debug:
        hit = cache.load(key)
        # A timeout recorded under a shorter timeout says nothing about a longer one.
        if hit is not None and not (hit.status == "timeout" and (hit.seconds or 0) < job.timeout):
            return hit.model_copy(update={"snippet_id": job.snippet_id, "checks": job.checks})
    verdict = _run(job, place, sha, launcher, facts)
    if not job.debug and failed_only_in_teardown(verdict):
        # torch 2.13's gloo teardown race (RankResult.teardown_crash) says nothing about the snippet, whose
        # every rank finished; one more run decides, and the verdict keeps the first run's reason.
        first = (verdict.reason or "").splitlines()[0]
        again = _run(job, place, sha, launcher, facts)
        verdict = again.model_copy(
            update={
                "teardown_retries": 1,
                "reason": (f"{again.reason}; this is a second run: the first failed only in interpreter teardown ({first})"),
            }
        )
    if verdict.status == "timeout" and launcher == "warm" and not job.debug and os.environ.get(CONFIRM_ENV, "1") != "0":
        verdict = _confirm(job, place, sha, verdict, facts)
    verdict = verdict.model_copy(update={"checks": job.checks})
    if not (job.path or job.env):  # a script run in place also depends on its directory, cwd and arguments
        cache.store(key, verdict)
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


def _confirm(job: Job, place: host.Placement, sha: str, warm: Verdict, facts: target.Facts) -> Verdict:
    """Rerun a warm timeout under torchrun, whose verdict is the one reported.

    Forked ranks start in milliseconds with torch already imported, which changes thread timing: a
    latent race can hang there and not under torchrun (torch 2.13: a gloo worker thread that needs the
    GIL while the main thread, holding it, joins that thread in ProcessGroupGloo's destructor, after
    DDP).  A hang is reported only when torch's own launcher hangs too.
    """
    confirmed = _run(job, place, sha, "torchrun", facts)
    if confirmed.status == "timeout":
        note = "the warm launcher timed out as well"
    else:
        note = f"the warm launcher had timed out ({warm.reason}); torchrun is authoritative"
    reason = f"{confirmed.reason} [{note}]" if confirmed.reason else note
    seconds = round((warm.seconds or 0) + (confirmed.seconds or 0), 3)
    return confirmed.model_copy(update={"reason": reason, "seconds": seconds})


_XDG_VARS = ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
STATE_PREFIX = "FSDP_SKILL_"


def scrubbed_env(environ) -> dict[str, str]:
    """A copy of ``environ`` without the tool's own variables (names starting ``FSDP_SKILL_``: state
    directory, cards, target interpreter, launcher knobs), for processes that run a user's code."""
    return {k: v for k, v in environ.items() if not k.startswith(STATE_PREFIX)}


_TORCHRUN_VARS = {
    "RANK",
    "LOCAL_RANK",
    "GROUP_RANK",
    "ROLE_RANK",
    "ROLE_NAME",
    "LOCAL_WORLD_SIZE",
    "WORLD_SIZE",
    "GROUP_WORLD_SIZE",
    "ROLE_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
}


def _job_env(job: Job, place: host.Placement, facts: target.Facts, rundir: str) -> dict[str, str]:
    """The ranks' environment: the caller's, less the tool's own state (every ``FSDP_SKILL_*`` variable, so
    a script cannot find the state directory or the cards) and any torchrun variables of the caller.
    Code without a file of its own (knowledge snippets, code sent over HTTP/MCP) also gets a private
    ``HOME`` (and XDG dirs under it) and ``TMPDIR`` inside ``rundir``, removed with the run (snippets that
    start torch elastic agents of their own leave ``torchelastic_*`` directories in TMPDIR); a user's script
    file keeps the caller's ``HOME`` and ``TMPDIR``, as under torchrun."""
    env = scrubbed_env(os.environ)
    if not job.path:
        home, tmp = os.path.join(rundir, "home"), os.path.join(rundir, "tmp")
        os.mkdir(home)
        os.mkdir(tmp)
        env["HOME"], env["TMPDIR"] = home, tmp
        for name in _XDG_VARS:
            env.pop(name, None)
    if job.world_size > 1:
        env.setdefault("OMP_NUM_THREADS", "1")  # what torchrun does for several ranks per node
    if place.backend == "gloo" and facts.device_count > 0:
        env["CUDA_VISIBLE_DEVICES"] = ""  # a gloo verdict means the ranks ran on CPU
    for key in list(env):  # a caller that itself runs under torchrun must not leak its own rank
        if key in _TORCHRUN_VARS or key.startswith("TORCHELASTIC_"):
            del env[key]
    env.update(scrubbed_env(job.env))
    return env


ZYGOTE_DIED = (
    "the warm launcher (the ranks' parent process) was killed during the run, on a fresh launcher "
    "too: does the script, or a process it starts, kill its parent process?"
)


def _run(job: Job, place: host.Placement, sha: str, launcher: str, facts: target.Facts, attempt: int = 1) -> Verdict:
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
        env = _job_env(job, place, facts, rundir)
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
                raw = _raw_from_zygote(msg, rundir)
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
            return verdict if job.nodes is None else _across_nodes(verdict, job, raw)
    finally:
        if not os.environ.get(KEEP_ENV):
            shutil.rmtree(rundir, ignore_errors=True)
    return _run(job, place, sha, launcher, facts, attempt=attempt + 1)  # the zygote died: once more


def stop_runs() -> None:
    """Kill every run in progress in this process (warm and torchrun; their callers get HarnessError once
    every process of the run is reaped) and start no warm launcher any more: for a server shutting down."""
    import sys

    torchrun = sys.modules.get("fsdp_skill.runtime.torchrun")
    if torchrun is not None:
        torchrun.abort_all()
    from fsdp_skill.runtime import warm

    warm.stop()


def _across_nodes(verdict: Verdict, job: Job, raw: RawRun) -> Verdict:
    """A multi-node verdict: world_size is the global one (nnodes x world_size per node), ranks are this
    node's under their global numbers, and the reason says which part of the job this node ran."""
    nodes = job.nodes
    total = nodes.nnodes * job.world_size
    mine = [r.rank for r in verdict.ranks]
    part = (
        (f"ranks {min(mine)}-{max(mine)} of {total}" if len(mine) > 1 else f"rank {mine[0]} of {total}")
        if mine
        else f"none of the {total} ranks"
    )
    reason = verdict.reason
    if verdict.status == "passed":
        reason = f"this node's {len(mine)} ranks exited 0 ({part}; {nodes.describe()})"
    elif verdict.status == "timeout" and not mine and raw.error:
        reason = raw.error
    else:
        first, _, rest = (reason or "").partition("\n")
        reason = f"{first} [this node ran {part}; {nodes.describe()}]" + (f"\n{rest}" if rest else "")
    return verdict.model_copy(update={"world_size": total, "nnodes": nodes.nnodes, "reason": reason})


def _int_or_none(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


def _raw_from_zygote(msg: dict, rundir: str) -> RawRun:
    ranks = []
    for r in msg["ranks"]:
        n = r["rank"]
        # A rank asked for its stack (SIGUSR1) after its faulthandler was gone (it was already exiting) dies
        # of that signal: the harness ended it, not the script.
        by_harness = r["killed_by_harness"] or (r["signal"] == "SIGUSR1" and r.get("dumped", False))
        ranks.append(
            RawRank(
                rank=n,
                exit_code=r["exit_code"],
                signal=r["signal"],
                killed_by_harness=by_harness,
                order=r.get("order"),
                log=read_text(os.path.join(rundir, f"rank{n}.log")),
                traceback=read_text(os.path.join(rundir, f"rank{n}.tb")) or None,
                stack=read_text(os.path.join(rundir, f"rank{n}.stack")) or None,
                script_exit=_int_or_none(read_text(os.path.join(rundir, f"rank{n}.exit"))),
            )
        )
    return RawRun(
        seconds=msg["seconds"],
        timed_out=msg["timed_out"],
        ranks=ranks,
        first_failure=msg["first_failure"],
        torch_version=msg.get("torch_version"),
    )
