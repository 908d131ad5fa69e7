"""Typed values of ``check``: a :class:`Rule` (the table README renders), a :class:`Finding` and the
:class:`CheckReport`; records (:mod:`fsdp_skill.records`), each field described by its attribute docstring."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from fsdp_skill.records import Record

Severity = Literal["error", "warning", "info"]


def printable(text: str) -> str:
    """``text`` with each unpaired surrogate (a file name's byte that is not UTF-8, as Python decodes it with
    ``surrogateescape``) written as Python's ``backslashreplace`` writes it, the way stderr and ``ascii()`` show that
    name: ``b'caf\\xe9.py'`` is ``caf\\udce9.py``; any other text is returned as it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class Rule(Record):
    """One rule of the checker: a mistake the knowledge explains, with the section and verified snippet that fix it."""

    code: str
    """Stable rule code, e.g. 'FSD001'"""
    severity: Severity
    """error: hangs, crashes or computes wrong results; warning: likely wrong or slow; info: a better pattern exists"""
    summary: str
    """What the rule catches, in a few words (README's rule table)"""
    message: str
    """The finding's message (may be extended with the names involved)"""
    section: str
    """Knowledge section id that explains the mistake"""
    snippet: str
    """Id of the verified snippet that shows the fix"""


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class Finding(Record):
    """One mistake found in a checked file."""

    code: str
    """Rule code, e.g. 'FSD001' ('FSD000': the file was not analysed: it does not parse, or the checker failed on it)"""
    severity: Severity
    """'error', 'warning' or 'info'"""
    message: str
    """What is wrong here and what to do instead"""
    path: str
    """The checked file as given ('-' for standard input)"""
    line: int
    """1-based line of the offending code"""
    col: int
    """1-based column of the offending code"""
    end_line: int
    """1-based line where the offending code ends"""
    end_col: int
    """1-based column just after the offending code"""
    section: str | None = None
    """Knowledge section id that explains it (`fsdp-skill show ID`)"""
    snippet: str | None = None
    """Id of the verified snippet that shows the fix (`fsdp-skill export ID`)"""
    fix: str | None = None
    """What `fsdp-skill check --fix` would change here (`--diff` shows it); null when there is no automatic fix"""

    def for_display(self) -> Finding:
        """This finding as it is printed (text, JSON, CI formats): its path and message :func:`printable`, so a file
        name that is not UTF-8 shows the same everywhere and encodes in any output; itself when nothing changes."""
        path, message = printable(self.path), printable(self.message)
        if path is self.path and message is self.message:
            return self
        return dataclasses.replace(self, path=path, message=message)

    def line_text(self) -> str:
        """The linter line ``path:line:col: CODE message [section]`` (path and message :func:`printable`)."""
        ref = f" [{self.section}]" if self.section else ""
        return f"{printable(self.path)}:{self.line}:{self.col}: {self.code} {printable(self.message)}{ref}"


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class CheckReport(Record):
    """The result of checking one source text (``POST /v1/check``, the ``check_script`` tool)."""

    findings: list[Finding] = field(default_factory=list)
    """The findings, sorted by position (empty: nothing to report)"""
    counts: dict[str, int] = field(default_factory=dict)
    """Number of findings per severity ('error', 'warning', 'info') and in all ('total')"""
