"""``# noqa`` comments: a line's ``# noqa`` silences every finding on it, ``# noqa: FSD003,FSD011`` only those
codes (a finding spanning several lines is silenced by a comment on any of them)."""

from __future__ import annotations

import io
import re
import tokenize

from fsdp_skill.core.check.models import Finding

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,\s*[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)


def noqa_lines(source: str) -> dict[int, set[str] | None]:
    """line -> codes silenced there (None: all)."""
    out: dict[int, set[str] | None] = {}
    if "noqa" not in source.lower():
        return out
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return out
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            match = _NOQA.search(tok.string)
            if match:
                codes = match.group("codes")
                out[tok.start[0]] = None if not codes else {c.strip().upper() for c in codes.split(",")}
    return out


def silenced(f: Finding, noqa: dict[int, set[str] | None]) -> bool:
    """Does a ``# noqa`` on any line of ``f`` (``noqa`` as :func:`noqa_lines` gives it) silence its code?"""
    for line in range(f.line, f.end_line + 1):
        if line in noqa:
            codes = noqa[line]
            if codes is None or f.code in codes:
                return True
    return False
