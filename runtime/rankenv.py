"""The ranks' environment: what a process running a user's code inherits from the tool, and what it does not.

scrubbed_env(environ)                     a copy without the tool's own variables (``FSDP_SKILL_*``)
job_env(job, place, facts, rundir)        the environment of a job's ranks (private HOME/TMPDIR for snippets)
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from fsdp_skill.runtime import dryrun, host, knobs, target
from fsdp_skill.runtime.job import Job

_XDG_VARS = ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")


def scrubbed_env(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``environ`` without the tool's own variables (names starting ``FSDP_SKILL_``: state
    directory, cards, target interpreter, launcher knobs), for processes that run a user's code."""
    return {k: v for k, v in environ.items() if not k.startswith(knobs.PREFIX)}


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


def job_env(job: Job, place: host.Placement, facts: target.Facts, rundir: str) -> dict[str, str]:
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
    dryrun.rank_env(job, env)
    return env
