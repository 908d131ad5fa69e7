"""Help texts of options that several adapters' commands share (``--python`` on ask, verify, plan, serve, mcp)."""

from __future__ import annotations

PYTHON_HELP = (
    "Python interpreter of your training environment: snippets run, and API signatures are read, "
    "under its torch (default: $FSDP_SKILL_PYTHON, else fsdp-skill's own interpreter)"
)
