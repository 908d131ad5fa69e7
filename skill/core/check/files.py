"""Checking paths (:func:`check_paths`): files, directories (every ``*.py`` below them, hidden folders and
``__pycache__`` / ``node_modules`` / ``site-packages`` skipped) and ``'-'`` (standard input). Several files
are checked as one project (:mod:`fsdp_skill.core.check.project`): a helper of one is followed from another.

A missing path, a non-Python file or text that is not UTF-8 raises :class:`fsdp_skill.errors.InvalidArgument`
(exit 2 on the CLI); every path is validated before any is checked.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from fsdp_skill.core.check.engine import check_source
from fsdp_skill.core.check.models import Finding
from fsdp_skill.core.check.project import Project
from fsdp_skill.core.check.selection import validate_codes
from fsdp_skill.errors import InvalidArgument

_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages"}


def _python_files(path: str) -> list[Path]:
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
            targets += [(f, str(f)) for f in _python_files(path)]
    sources = [(label, _read(p, label)) for p, label in targets]
    # several files: a project, whose helpers are followed from one file into another (one file: as before)
    project = Project.build(sources) if len(sources) > 1 else None
    out: list[Finding] = []
    for label, code in sources:
        out += check_source(code, label, select=sel, ignore=ign, project=project)
    return out
