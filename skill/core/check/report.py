"""Checking code a caller sent (HTTP ``POST /v1/check``, the MCP / function-call tool ``check_script``):
:func:`check_code` returns a :class:`~fsdp_skill.core.check.models.CheckReport`, the findings with their counts;
and the formats CI reads (``check --output-format``): :func:`github_annotations` (GitHub workflow commands) and
:func:`sarif_log` (SARIF 2.1.0, for code scanning)."""

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


# --- output formats CI reads: GitHub workflow commands and SARIF 2.1.0 -----------------------------------------
_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(findings: Iterable[Finding]) -> str:
    """GitHub Actions workflow commands, one line per finding:
    ``::error file=P,line=L,col=C,endLine=L2,endColumn=C2,title=FSD0xx::message [section]`` (``warning``; ``notice``
    for info), escaped as the runner's toolkit escapes them (``%``, CR, LF; ``:`` and ``,`` in properties too)."""
    lines = []
    for f in (f.for_display() for f in findings):
        ref = f" [{f.section}]" if f.section else ""
        props = f"file={_gh_prop(f.path)},line={f.line},col={f.col},endLine={f.end_line},endColumn={f.end_col},title={_gh_prop(f.code)}"
        lines.append(f"::{_GITHUB_LEVEL[f.severity]} {props}::{_gh_data(f.message + ref)}\n")
    return "".join(lines)


def _artifact_uri(path: str) -> str:
    """The file's URI reference: its name's bytes percent-encoded (``os.fsencode``: a name that is not UTF-8,
    ``b'caf\\xe9.py'``, is ``caf%E9.py``, the file itself)."""
    import os
    from pathlib import PurePath, PurePosixPath
    from urllib.parse import quote

    if path == "-":
        return "stdin"
    p = PurePath(path)
    if p.is_absolute():
        return "file://" + quote(os.fsencode(PurePosixPath(*p.parts).as_posix() if p.anchor == "/" else p.as_posix()))
    return quote(os.fsencode(p.as_posix()))


def sarif_log(findings: Iterable[Finding], *, version: str = "0") -> dict[str, object]:
    """A SARIF 2.1.0 log (one run) of ``findings``: the rule table as ``tool.driver.rules`` (each with its summary,
    message, severity as ``defaultConfiguration.level``, and the knowledge section and snippet in ``help`` and
    ``properties``; no ``helpUri``: sections have no public URL) and one result per finding with its region.

    Columns are the checker's (1-based; for non-ASCII lines, UTF-8 bytes as :mod:`ast` counts)."""
    from fsdp_skill.core.check.rules import NOT_ANALYSED, RULES

    descriptors: list[dict[str, object]] = [
        {
            "id": NOT_ANALYSED,
            "name": "file-not-analysed",
            "shortDescription": {"text": "the file was not analysed (it does not parse, or the checker failed on it)"},
            "defaultConfiguration": {"level": "error"},
        }
    ]
    for r in RULES.values():
        descriptors.append(
            {
                "id": r.code,
                "shortDescription": {"text": r.summary.replace("`", "")},
                "fullDescription": {"text": r.message},
                "help": {
                    "text": f"{r.message}. Explained in section {r.section} (fsdp-skill show {r.section}); "
                    f"the fix, verified: snippet {r.snippet} (fsdp-skill export {r.snippet}).",
                    "markdown": f"{r.message}.\n\nExplained in `{r.section}` (`fsdp-skill show {r.section}`); the fix, "
                    f"verified: `{r.snippet}` (`fsdp-skill export {r.snippet}`).",
                },
                "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
                "properties": {"section": r.section, "snippet": r.snippet, "tags": [r.section.split("/")[0]]},
            }
        )
    index = {d["id"]: i for i, d in enumerate(descriptors)}
    results: list[dict[str, object]] = []
    for f in findings:
        result: dict[str, object] = {
            "ruleId": f.code,
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.for_display().message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _artifact_uri(f.path)},
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.col,
                            "endLine": f.end_line,
                            "endColumn": max(f.end_col, 1),
                        },
                    }
                }
            ],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        props: dict[str, object] = {}
        if f.section:
            props["section"] = f.section
        if f.fix:
            props["fix"] = f.fix
        if props:
            result["properties"] = props
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "fsdp-skill",
                        "version": version,
                        "rules": descriptors,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
