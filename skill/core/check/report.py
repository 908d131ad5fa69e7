"""Checking code a caller sent (HTTP ``POST /v1/check``, the MCP / function-call tool ``check_script``):
:func:`check_code` returns a :class:`~fsdp_skill.core.check.models.CheckReport`, the findings with their counts."""

from __future__ import annotations

from collections.abc import Iterable

from fsdp_skill.core.check.engine import check_source
from fsdp_skill.core.check.models import CheckReport, Finding
from fsdp_skill.errors import InvalidArgument

MAX_CHECK_CHARS = 200_000  # code sent over HTTP / MCP (a 2,000-line script is about 80,000)


def report(findings: list[Finding]) -> CheckReport:
    """``findings`` with their counts per severity and in all."""
    counts = {sev: sum(f.severity == sev for f in findings) for sev in ("error", "warning", "info")}
    counts["total"] = len(findings)
    return CheckReport(findings=findings, counts=counts)


def check_code(
    code: str, path: str = "script.py", *, select: Iterable[str] | None = None, ignore: Iterable[str] | None = None
) -> CheckReport:
    """Check code a caller sent (never run): the findings and their counts.

    Raises InvalidArgument for code over :data:`MAX_CHECK_CHARS` characters or an unknown code prefix."""
    if len(code) > MAX_CHECK_CHARS:
        raise InvalidArgument(f"the code is {len(code):,} characters; the limit is {MAX_CHECK_CHARS:,}")
    return report(check_source(code, path, select=select, ignore=ignore))
