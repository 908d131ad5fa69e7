"""Checking one source text (:func:`check_source`) or an already parsed module (:func:`check_tree`, what a
flake8 plugin gets): the facts are computed once, every finder runs on them, and each hit becomes a
:class:`~fsdp_skill.core.check.models.Finding` carrying its rule's message, section and snippet.

A file that does not parse is a finding (``FSD000``, an error at the syntax error, or at line 1 for a file
nested too deeply for Python's parser or whose parse meets CPython's thread race, :mod:`fsdp_skill.core.parsing`),
so one broken file does not hide the others; so is a file the checker
itself fails on (``FSD000`` at line 1, naming the exception), and one whose analysis runs past its budget.

The budget: :func:`check_budget` CPU seconds of analysis per file (the analysing thread's, :func:`analysis_clock`, so a busy
machine does not shrink it) (``FSDP_SKILL_CHECK_BUDGET``, default
:data:`DEFAULT_BUDGET_S`), measured from the start of :func:`check_tree` and looked at in the helpers every rule
uses (:meth:`FileFacts.tick`); a file past it is one ``FSD000`` finding naming the budget, and no other finding of
that file is reported. The analysis is near-linear in the size of the file and the number of findings, so a file
of real code is far inside it (a 2,000-line file takes about 0.1 s); the budget bounds a pathological one.
"""

from __future__ import annotations

import ast
import math
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import fsdp_skill.core.check.accelerate_rules  # noqa: F401 - registers the finders of FSD089, FSD090
import fsdp_skill.core.check.accum_rules  # noqa: F401 - registers the finder of FSD083
import fsdp_skill.core.check.calls_rules  # noqa: F401 - registers the finders of FSD039, FSD041, FSD042, FSD044
import fsdp_skill.core.check.checkpoint_rules  # noqa: F401 - registers the finders of FSD069-FSD072
import fsdp_skill.core.check.deepspeed_rules  # noqa: F401 - registers the finder of FSD082
import fsdp_skill.core.check.device_rules  # noqa: F401 - registers the finders of FSD047-FSD053 (and narrows FSD027)
import fsdp_skill.core.check.group_rules  # noqa: F401 - registers FSD009's finder of rank-built new_group lists
import fsdp_skill.core.check.metric_rules  # noqa: F401 - registers the finders of FSD086-FSD088
import fsdp_skill.core.check.setup_rules  # noqa: F401 - registers the finders of FSD074-FSD076, FSD084 and FSD085
from fsdp_skill.core.check import data_rules as _data_rules  # noqa: F401 - registers FSD061-FSD068, FSD073
from fsdp_skill.core.check import divergence  # noqa: F401 - registers FSD037, FSD038, FSD040, FSD045 in FINDERS
from fsdp_skill.core.check import flow_rules as _flow_rules  # noqa: F401 - registers FSD054-FSD060
from fsdp_skill.core.check import map_location as _map_location  # noqa: F401 - registers FSD043's finder
from fsdp_skill.core.check import step_rules as _step_rules  # noqa: F401 - registers FSD077-FSD080
from fsdp_skill.core.check.calls import build_facts
from fsdp_skill.core.check.facts import BudgetExceeded, Located, analysis_clock
from fsdp_skill.core.check.finders import FINDERS
from fsdp_skill.core.check.fix import FIXABLE, with_fixes
from fsdp_skill.core.check.models import Finding, Severity
from fsdp_skill.core.check.noqa import noqa_lines, silenced
from fsdp_skill.core.check.rank_conditional import rank_findings
from fsdp_skill.core.check.rules import NOT_ANALYSED, RULES
from fsdp_skill.core.check.selection import keep, validate_codes
from fsdp_skill.core.check.syntax import newer_syntax, parse_source
from fsdp_skill.errors import InvalidArgument
from fsdp_skill.runtime import knobs

if TYPE_CHECKING:
    from fsdp_skill.core.check.project import Project

_PY = f"{sys.version_info.major}.{sys.version_info.minor}"
DEFAULT_BUDGET_S = 10.0  # CPU seconds of analysis per file


def check_budget() -> float:
    """Seconds of analysis one file may take: ``FSDP_SKILL_CHECK_BUDGET`` (a positive number), else
    :data:`DEFAULT_BUDGET_S`. Raises InvalidArgument for a value that is not a positive number of seconds."""
    raw = os.environ.get(knobs.CHECK_BUDGET, "").strip()
    if not raw:
        return DEFAULT_BUDGET_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value > 0:  # also NaN
        raise InvalidArgument(f"{knobs.CHECK_BUDGET}={raw!r}: expected a positive number of seconds (e.g. 10)")
    return value


def not_analysed(path: str, message: str, line: int = 1, col: int = 1, severity: Severity = "error") -> Finding:
    """An ``FSD000`` finding: the file was not analysed, for the reason ``message`` gives."""
    return Finding(
        code=NOT_ANALYSED, severity=severity, message=message, path=path, line=line, col=col, end_line=line, end_col=col
    )


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
    code: str,
    path: str = "<string>",
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    project: Project | None = None,
) -> list[Finding]:
    """Findings for one source text, sorted by position (``path`` only labels them); ``# noqa`` applies.

    ``project``: the checked files ``path`` belongs to (:mod:`fsdp_skill.core.check.project`), whose helpers
    are followed across files."""
    sel, ign = validate_codes(select), validate_codes(ignore)
    check_budget()  # a bad FSDP_SKILL_CHECK_BUDGET is bad input, whatever the file
    try:  # the grammar is the running interpreter's: a 3.12 f-string does not parse under 3.11
        known = project.tree_for(path, code) if project is not None else None  # parsed once, by the project, from this text
        tree = known if known is not None else parse_source(code, path)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes
        line = getattr(exc, "lineno", None) or 1
        col = getattr(exc, "offset", None) or 1
        msg = getattr(exc, "msg", None) or str(exc)
        newer = newer_syntax(exc) if isinstance(exc, SyntaxError) else None
        if newer:  # valid for a newer Python: say so, at info level, rather than call the file broken
            why = f"not analysed: this file uses {newer}, and the checker runs on Python {_PY}; run it under a newer Python"
            found = [not_analysed(path, why, line, col, severity="info")]
        else:
            found = [not_analysed(path, f"file does not parse with Python {_PY}: {msg}", line, col)]
        return [f for f in found if keep(f.code, sel, ign)]
    except (RecursionError, MemoryError) as exc:  # Python's own parser gives up on code nested a few thousand deep
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        found = [not_analysed(path, f"file does not parse with Python {_PY}: nested too deeply for its parser ({why})")]
        return [f for f in found if keep(f.code, sel, ign)]
    except SystemError as exc:  # CPython's parser race (gh-106905) outlasted the retries of core.parsing
        why = f"file not analysed: Python {_PY}'s parser failed on it (SystemError: {exc}); check it again"
        return [f for f in [not_analysed(path, why)] if keep(f.code, sel, ign)]
    try:
        found = check_tree(tree, path, select=sel, ignore=ign, project=project)
    except Exception as exc:  # noqa: BLE001 - a checker bug on one file must not hide the findings of the others
        found = [
            not_analysed(
                path,
                f"file not analysed: the checker failed on it ({type(exc).__name__}: {exc}); please report this with the file",
            )
        ]
    if not found:
        return found
    noqa = noqa_lines(code)  # only where there is something to silence: most files have no finding
    found = [f for f in found if not silenced(f, noqa) and keep(f.code, sel, ign)]
    if any(f.code in FIXABLE for f in found):  # what --fix would change (planned on the ast; libcst is not loaded)
        found = with_fixes(tree, code, found)
    return found


def check_tree(
    tree: ast.Module,
    path: str = "<string>",
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    project: Project | None = None,
) -> list[Finding]:
    """Findings for an already parsed module (a flake8 plugin gets the tree and applies ``# noqa`` itself);
    ``project``: as for :func:`check_source` (its facts of ``path`` are used when it has them).

    An analysis past :func:`check_budget` seconds is one ``FSD000`` finding at line 1 instead (see the module
    docstring). Raises InvalidArgument for an unknown code in ``select`` / ``ignore`` or a bad budget."""
    sel, ign = validate_codes(select), validate_codes(ignore)
    budget = check_budget()
    try:
        raw = _raw_findings(tree, path, analysis_clock() + budget, project)
    except BudgetExceeded:
        message = (
            f"file not analysed: its analysis ran past the budget of {budget:g} s per file ({knobs.CHECK_BUDGET}); "
            "no finding of this file is reported"
        )
        return [f for f in [not_analysed(path, message)] if keep(f.code, sel, ign)]
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


# rules whose mistake a test does on purpose: a parity test feeds every rank the same batches to compare a sharded run
# with one process (FSD061's "unsharded loader" is the point of such a test)
SILENT_IN_TESTS = frozenset({"FSD061"})


def is_test_file(path: str) -> bool:
    """Is ``path`` a test module by its name (``test_*.py``, ``*_test.py``, ``*_test_utils.py``, ``conftest.py``)?"""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.startswith("test_") or name.endswith(("_test.py", "_test_utils.py")) or name == "conftest.py"


def _raw_findings(tree: ast.Module, path: str, deadline: float, project: Project | None) -> list[tuple[str, Located, str | None]]:
    """(code, node, detail) of every rule's hits on ``tree`` (the facts of ``path`` that ``project`` built, else
    :func:`~fsdp_skill.core.check.calls.build_facts` of ``tree``). Raises BudgetExceeded past ``deadline`` (a
    :func:`analysis_clock` value (CPU seconds of the analysing thread)), looked at by the facts' helpers and after each rule."""
    facts = project.facts_for(path) if project is not None else None
    if facts is not None and facts.tree is tree:
        facts.deadline = deadline  # built by the project under a budget of its own; the rules get this one
    else:  # alone, or a text other than the one the project parsed under this label: the facts of this tree
        facts = build_facts(tree, project.context_for(path) if project is not None else None, deadline=deadline)
    raw: list[tuple[str, Located, str | None]] = list(rank_findings(facts))
    in_tests = is_test_file(path)
    for code_, fn in FINDERS.items():
        if in_tests and code_ in SILENT_IN_TESTS:
            continue
        raw += [(code_, node, detail) for node, detail in fn(facts)]
        if analysis_clock() > deadline:
            raise BudgetExceeded(f"past the deadline after {code_}")
    return raw
