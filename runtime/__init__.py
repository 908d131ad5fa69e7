"""Verification harness of fsdp-skill: run a complete script on a real multi-process process group.

    verify_code(code, world_size=2, backend="auto", timeout=60.0, ...) -> Verdict
    verify_many([Job(...), ...], progress=...) -> list[Verdict]     one warm launcher for the batch
    cached_verdict(code, world_size=2, backend="auto", requires=()) -> Verdict | None   (no torch, no run)
    shutdown()                                                        stop the warm launcher (also atexit)

Launchers: ``warm`` forks ranks from a zygote that preloaded torch (:mod:`fsdp_skill.runtime.zygote`, ~0.2 s per
small script) and ``torchrun`` runs ``python -m torch.distributed.run --standalone`` (:mod:`fsdp_skill.runtime.torchrun`).
Every function takes ``python=``: the target interpreter that runs the ranks and whose torch keys the cache
(default: ``$FSDP_SKILL_PYTHON``, else this one; :mod:`fsdp_skill.runtime.target`).
A failing script is a Verdict (``status="failed"``); :class:`HarnessError` means the run could not happen.
Importing this package does not import torch.
"""

from fsdp_skill.errors import HarnessError
from fsdp_skill.runtime.api import Job, cached_verdict, verify_code, verify_many
from fsdp_skill.runtime.models import RankResult, Verdict
from fsdp_skill.runtime.warm import shutdown

__all__ = ["verify_code", "verify_many", "cached_verdict", "Job", "HarnessError", "Verdict", "RankResult", "shutdown"]
