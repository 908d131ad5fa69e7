"""Optional parts of fsdp-skill and the pip extras that install them.

The light core (question routing, knowledge, CLI ``ask``/``show``) needs no torch, web or MCP library;
``serve`` needs FastAPI and uvicorn (extra ``serve``) and ``mcp`` the MCP SDK (extra ``mcp``).  Torch
(extra ``torch``) is not checked here: it is needed in the *target* interpreter, which may be another
environment (``--python``); :func:`fsdp_skill.runtime.api.require_torch` checks it there.
"""

from __future__ import annotations

import importlib.util

from fsdp_skill.errors import MissingDependency

EXTRAS: dict[str, tuple[str, ...]] = {
    "serve": ("fastapi", "uvicorn"),
    "mcp": ("mcp",),
}


def missing(extra: str) -> list[str]:
    """Top-level modules of ``extra`` (a key of :data:`EXTRAS`) that cannot be imported here."""
    return [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]


def require(extra: str, purpose: str) -> None:
    """Raise :class:`MissingDependency` unless every module of ``extra`` is importable.

    ``purpose`` starts the message, e.g. ``"fsdp-skill serve"``; nothing is imported (find_spec only).
    """
    absent = missing(extra)
    if absent:
        raise MissingDependency(
            f"{purpose} needs {', '.join(absent)}, which is not installed here; "
            f"install the extra: pip install 'fsdp-skill[{extra}]'"
        )
