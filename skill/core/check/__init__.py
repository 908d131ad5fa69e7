"""``check``: find FSDP / torch.distributed mistakes in a training script statically, each linked to the
knowledge section that explains it and the verified snippet that shows the fix.

The code is parsed with :mod:`ast`, never imported or run, and torch is never imported.

- :func:`check_source` checks one source text, :func:`check_tree` an already parsed module (what a flake8
  plugin gets); :func:`check_paths` checks files, directories (every
  ``*.py`` below them) and ``'-'`` (standard input); :func:`check_code` checks code sent by a caller (HTTP,
  MCP) and returns a :class:`CheckReport` with counts; :func:`code_blocks` finds the Python code pasted in a
  question (``ask``).
- A line's ``# noqa`` silences every finding on it, ``# noqa: FSD003,FSD011`` only those codes (a finding
  spanning several lines is silenced by a comment on any of them).
- ``select`` / ``ignore`` keep or drop findings by code prefix (``FSD0`` selects all, ``FSD01`` FSD010-FSD019).
- A file that does not parse is a finding (``FSD000``, an error at the syntax error), so one broken file
  does not hide the others; so is a file the checker itself fails on (``FSD000`` at line 1, naming the
  exception); a missing path, a non-Python file or text that is not UTF-8 raises
  :class:`fsdp_skill.errors.InvalidArgument` (exit 2 on the CLI).

The rules are listed in :data:`RULES` (:mod:`fsdp_skill.core.check.rules`).
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterable
from pathlib import Path

from fsdp_skill.core.check.facts import Module
from fsdp_skill.core.check.finders import FINDERS
from fsdp_skill.core.check.models import CheckReport, Finding, Rule
from fsdp_skill.core.check.rank_conditional import rank_findings
from fsdp_skill.core.check.rules import RULES, SYNTAX
from fsdp_skill.errors import InvalidArgument

__all__ = [
    "CheckReport",
    "Finding",
    "Rule",
    "RULES",
    "MAX_CHECK_CHARS",
    "check_code",
    "check_source",
    "check_tree",
    "check_paths",
    "code_blocks",
    "validate_codes",
]

MAX_CHECK_CHARS = 200_000  # code sent over HTTP / MCP (a 2,000-line script is about 80,000)

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,\s*[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages"}

_PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def validate_codes(prefixes: Iterable[str] | None) -> list[str]:
    """Upper-cased code prefixes; raises InvalidArgument for one that matches no rule (e.g. 'E501')."""
    out = []
    known = [*RULES, SYNTAX]
    for p in prefixes or []:
        for part in (x.strip().upper() for x in p.split(",")):
            if not part:
                continue
            if not any(code.startswith(part) for code in known):
                raise InvalidArgument(f"unknown rule code {part!r}: codes are {SYNTAX}-{max(RULES)} (see README's rule table)")
            out.append(part)
    return out


def _noqa(source: str) -> dict[int, set[str] | None]:
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


def _finding(code: str, node: ast.AST, detail: str | None, path: str) -> Finding:
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


def _keep(code: str, select: list[str], ignore: list[str]) -> bool:
    return (not select or any(code.startswith(s) for s in select)) and not any(code.startswith(i) for i in ignore)


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
                code=SYNTAX,
                severity="error",
                message=f"file does not parse with Python {_PY}: {msg}",
                path=path,
                line=line,
                col=col,
                end_line=line,
                end_col=col,
            )
        ]
        return [f for f in found if _keep(f.code, sel, ign)]
    noqa = _noqa(code)
    try:
        found = check_tree(tree, path, select=sel, ignore=ign)
    except Exception as exc:  # noqa: BLE001 - a checker bug on one file must not hide the findings of the others
        found = [
            Finding(
                code=SYNTAX,
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
    return [f for f in found if not _silenced(f, noqa) and _keep(f.code, sel, ign)]


def check_tree(
    tree: ast.Module, path: str = "<string>", *, select: Iterable[str] | None = None, ignore: Iterable[str] | None = None
) -> list[Finding]:
    """Findings for an already parsed module (a flake8 plugin gets the tree and applies ``# noqa`` itself)."""
    sel, ign = validate_codes(select), validate_codes(ignore)
    m = Module.build(tree)
    raw: list[tuple[str, ast.AST, str | None]] = list(rank_findings(m))
    for code_, fn in FINDERS.items():
        raw += [(code_, node, detail) for node, detail in fn(m)]
    seen = set()
    out = []
    for code_, node, detail in raw:
        f = _finding(code_, node, detail, path)
        key = (f.code, f.line, f.col)
        if key in seen or not _keep(f.code, sel, ign):
            continue
        seen.add(key)
        out.append(f)
    return sorted(out, key=lambda f: (f.line, f.col, f.code))


def _silenced(f: Finding, noqa: dict[int, set[str] | None]) -> bool:
    for line in range(f.line, f.end_line + 1):
        if line in noqa and (noqa[line] is None or f.code in noqa[line]):
            return True
    return False


def _files(path: str) -> list[Path]:
    p = Path(path)
    if p.is_dir():
        return sorted(
            f
            for f in p.rglob("*.py")
            if f.is_file() and not any(part.startswith(".") or part in _SKIP_DIRS for part in f.relative_to(p).parts[:-1])
        )
    if not p.exists():
        raise InvalidArgument(f"{path}: no such file or directory")
    if not p.is_file():
        raise InvalidArgument(f"{path}: not a file or directory")
    if p.suffix not in (".py", ".pyw") and not _python_shebang(p):
        raise InvalidArgument(f"{path}: not a Python file (expected a .py script)")
    return [p]


def _python_shebang(p: Path) -> bool:
    try:
        with p.open("rb") as fh:
            first = fh.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def _read(p: Path | None, label: str) -> str:
    try:
        data = sys.stdin.buffer.read() if p is None else p.read_bytes()
    except (OSError, ValueError, AttributeError) as exc:
        raise InvalidArgument(f"{label}: cannot read: {exc}") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidArgument(f"{label}: not UTF-8 text") from None


def check_paths(
    paths: Iterable[str], *, select: Iterable[str] | None = None, ignore: Iterable[str] | None = None
) -> list[Finding]:
    """Findings for files, directories (recursively, ``*.py``; hidden folders skipped) and ``'-'`` (stdin).

    Every path is validated before any is checked, so bad input fails fast with InvalidArgument."""
    sel, ign = validate_codes(select), validate_codes(ignore)
    paths = list(paths)
    if not paths:
        raise InvalidArgument("give at least one PATH (a file, a directory, or '-' for standard input)")
    targets: list[tuple[Path | None, str]] = []
    for path in paths:
        if path == "-":
            if sys.stdin is None:
                raise InvalidArgument("'-' reads the script from standard input, which is closed")
            targets.append((None, "-"))
        else:
            targets += [(f, str(f)) for f in _files(path)]
    out: list[Finding] = []
    for p, label in targets:
        out += check_source(_read(p, label), label, select=sel, ignore=ign)
    return out


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


_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
_CODE_LINE = re.compile(
    r"^\s*(import \w|from [\w.]+ import |def \w+\(|class \w+[(:]|for .+ in .+:\s*$|"
    r"if .+:\s*$|with .+:\s*$|\w[\w.\[\]]* = .+|[\w.]+\(.*\)\s*$|return\b)"
)
_CODE_LANGS = {"", "python", "py", "python3", "py3", "ipython"}


def code_blocks(text: str) -> list[str]:
    """The Python code in a question: every fenced block (```python, ```py or unlabelled) that parses,
    else, with no fence, the text itself when at least three of its lines are code and it parses whole
    (a pasted script).  Prose, tracebacks and logs give no blocks."""
    blocks = []
    for m in _FENCE.finditer(text):
        if m.group(2).lower() in _CODE_LANGS and _parses(m.group(3)):
            blocks.append(m.group(3))
    if blocks or _FENCE.search(text):
        return blocks
    lines = [ln for ln in text.splitlines() if ln.strip()]
    code_lines = sum(bool(_CODE_LINE.match(ln)) for ln in lines)
    if code_lines >= 3 and code_lines * 2 >= len(lines) and _parses(text):
        return [text]
    return []


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return bool(code.strip())
