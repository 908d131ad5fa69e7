"""Typed values of ``check``: a :class:`Rule` (the table README renders) and a :class:`Finding`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Severity = Literal["error", "warning", "info"]


class Rule(BaseModel):
    """One rule of the checker: a mistake the knowledge explains, with the section and verified snippet that fix it."""

    code: str = Field(description="Stable rule code, e.g. 'FSD001'")
    severity: Severity = Field(
        description="error: hangs, crashes or computes wrong results; warning: likely wrong "
        "or slow; info: a better pattern exists"
    )
    summary: str = Field(description="What the rule catches, in a few words (README's rule table)")
    message: str = Field(description="The finding's message (may be extended with the names involved)")
    section: str = Field(description="Knowledge section id that explains the mistake")
    snippet: str = Field(description="Id of the verified snippet that shows the fix")


class Finding(BaseModel):
    """One mistake found in a checked file."""

    code: str = Field(
        description="Rule code, e.g. 'FSD001' ('FSD000': the file was not analysed: it does not parse, or the checker failed on it)"
    )
    severity: Severity = Field(description="'error', 'warning' or 'info'")
    message: str = Field(description="What is wrong here and what to do instead")
    path: str = Field(description="The checked file as given ('-' for standard input)")
    line: int = Field(description="1-based line of the offending code")
    col: int = Field(description="1-based column of the offending code")
    end_line: int = Field(description="1-based line where the offending code ends")
    end_col: int = Field(description="1-based column just after the offending code")
    section: str | None = Field(None, description="Knowledge section id that explains it (`fsdp-skill show ID`)")
    snippet: str | None = Field(None, description="Id of the verified snippet that shows the fix (`fsdp-skill export ID`)")

    def line_text(self) -> str:
        """The linter line ``path:line:col: CODE message [section]``."""
        ref = f" [{self.section}]" if self.section else ""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}{ref}"


class CheckReport(BaseModel):
    """The result of checking one source text (``POST /v1/check``, the ``check_script`` tool)."""

    findings: list[Finding] = Field(
        default_factory=list, description="The findings, sorted by position (empty: nothing to report)"
    )
    counts: dict[str, int] = Field(
        default_factory=dict, description="Number of findings per severity ('error', 'warning', 'info') and in all ('total')"
    )
