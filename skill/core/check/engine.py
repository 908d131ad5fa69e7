"""Checking one source text (:func:`check_source`) or an already parsed module (:func:`check_tree`, what a
flake8 plugin gets): the facts are computed once, every finder runs on them, and each hit becomes a
:class:`~fsdp_skill.core.check.models.Finding` carrying its rule's message, section and snippet.

A file that does not parse is a finding (``FSD000``, an error at the syntax error), so one broken file does
not hide the others; so is a file the checker itself fails on (``FSD000`` at line 1, naming the exception).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable

from fsdp_skill.core.check import divergence  # noqa: F401 - registers FSD037, FSD038, FSD040, FSD045 in FINDERS
from fsdp_skill.core.check.facts import FileFacts, Located
from fsdp_skill.core.check.finders import FINDERS
from fsdp_skill.core.check.models import Finding
from fsdp_skill.core.check.noqa import noqa_lines, silenced
from fsdp_skill.core.check.rank_conditional import rank_findings
from fsdp_skill.core.check.rules import NOT_ANALYSED, RULES
from fsdp_skill.core.check.selection import keep, validate_codes

_PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def _finding(code: str, node: Located, detail: str | None, path: str) -> Finding:
    rule = RULES[code]
    if not detail:
        message = rule.message
    elif detail.startswith("("):  # where the other half of an ordering mistake is
        message = f"{rule.message} {detail}"
    else:
        message = f"{detail}; {rule.message}"
    return Finding(
        code=code,
        severity=rule.severity,
        message=message,
        path=path,
        line=node.lineno,
        col=node.col_offset + 1,
        end_line=node.end_lineno or node.lineno,
        end_col=(node.end_col_offset or node.col_offset) + 1,
        section=rule.section,
        snippet=rule.snippet,
    )


def check_source(
    code: str, path: str = "<string>", *, select: Iterable[str] | None = None, ignore: Iterable[str] | None = None
) -> list[Finding]:
    """Findings for one source text, sorted by position (``path`` only labels them); ``# noqa`` applies."""
    sel, ign = validate_codes(select), validate_codes(ignore)
    try:  # the grammar is the running interpreter's: a 3.12 f-string does not parse under 3.11
        tree = ast.parse(code, filename=path)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes
        line = getattr(exc, "lineno", None) or 1
        col = getattr(exc, "offset", None) or 1
        msg = getattr(exc, "msg", None) or str(exc)
        found = [
            Finding(
                code=NOT_ANALYSED,
                severity="error",
                message=f"file does not parse with Python {_PY}: {msg}",
                path=path,
                line=line,
                col=col,
                end_line=line,
                end_col=col,
            )
        ]
        return [f for f in found if keep(f.code, sel, ign)]
    noqa = noqa_lines(code)
    try:
        found = check_tree(tree, path, select=sel, ignore=ign)
    except Exception as exc:  # noqa: BLE001 - a checker bug on one file must not hide the findings of the others
        found = [
            Finding(
                code=NOT_ANALYSED,
                severity="error",
                path=path,
                line=1,
                col=1,
                end_line=1,
                end_col=1,
                message=f"file not analysed: the checker failed on it ({type(exc).__name__}: {exc}); "
                "please report this with the file",
            )
        ]
    return [f for f in found if not silenced(f, noqa) and keep(f.code, sel, ign)]


def check_tree(
    tree: ast.Module, path: str = "<string>", *, select: Iterable[str] | None = None, ignore: Iterable[str] | None = None
) -> list[Finding]:
    """Findings for an already parsed module (a flake8 plugin gets the tree and applies ``# noqa`` itself)."""
    sel, ign = validate_codes(select), validate_codes(ignore)
    facts = FileFacts.build(tree)
    raw: list[tuple[str, Located, str | None]] = list(rank_findings(facts))
    for code_, fn in FINDERS.items():
        raw += [(code_, node, detail) for node, detail in fn(facts)]
    seen: set[tuple[str, int, int]] = set()
    out: list[Finding] = []
    for code_, node, detail in raw:
        f = _finding(code_, node, detail, path)
        key = (f.code, f.line, f.col)
        if key in seen or not keep(f.code, sel, ign):
            continue
        seen.add(key)
        out.append(f)
    return sorted(out, key=lambda f: (f.line, f.col, f.code))
