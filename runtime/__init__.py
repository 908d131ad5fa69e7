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

Importing this package imports neither torch nor the harness: the names above load their module on first
access (PEP 562), so ``fsdp_skill.runtime.target`` / ``.cache`` / ``.models`` stay cheap for a cached ``ask``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fsdp_skill.errors import HarnessError

if TYPE_CHECKING:
    from fsdp_skill.runtime.api import Job, cached_verdict, verify_code, verify_many
    from fsdp_skill.runtime.models import RankResult, Verdict
    from fsdp_skill.runtime.warm import shutdown

__all__ = ["verify_code", "verify_many", "cached_verdict", "Job", "HarnessError", "Verdict", "RankResult", "shutdown"]


def __getattr__(name: str) -> Any:
    """The harness's public names, imported from their module on first access; AttributeError for any other."""
    if name in ("Job", "cached_verdict", "verify_code", "verify_many"):
        from fsdp_skill.runtime import api

        value = getattr(api, name)
    elif name in ("RankResult", "Verdict"):
        from fsdp_skill.runtime import models

        value = getattr(models, name)
    elif name == "shutdown":
        from fsdp_skill.runtime import warm

        value = warm.shutdown
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
