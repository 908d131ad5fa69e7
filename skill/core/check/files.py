"""Checking paths (:func:`check_paths`): files, directories (every ``*.py`` below them, hidden folders and
``__pycache__`` / ``node_modules`` / ``site-packages`` skipped) and ``'-'`` (standard input). Several files
are checked as one project (:mod:`fsdp_skill.core.check.project`): a helper of one is followed from another.

A missing path or a non-Python file raises :class:`fsdp_skill.errors.InvalidArgument` (exit 2 on the CLI); every
path is validated before any is checked. A file is read as Python reads it (:func:`read_source`): UTF-8 unless a
BOM or a PEP 263 coding cookie (``# -*- coding: latin-1 -*-``) says otherwise; one that cannot be decoded so is an
``FSD000`` finding of its own (Python would refuse to run it too), and the other files are still checked.

While paths are checked, the interpreter's full (oldest-generation) garbage collections are held off
(:func:`fewer_full_collections`): the project keeps every file's tree and facts alive until the last file is checked
(about 1 GB for a 3,000-file repository), and each full collection walks all of them for the few cycles it frees
(a 3,000-file repository: about a third of the time). The young generations are still collected.
"""

from __future__ import annotations

import codecs
import gc
import io
import sys
import threading
import tokenize
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from fsdp_skill.core.check.engine import check_budget, check_source, not_analysed
from fsdp_skill.core.check.models import Finding
from fsdp_skill.core.check.project import Project
from fsdp_skill.core.check.rules import NOT_ANALYSED
from fsdp_skill.core.check.selection import keep, validate_codes
from fsdp_skill.errors import InvalidArgument

_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages"}
_NO_FULL_GC = 2**31 - 1  # the oldest generation's threshold while paths are checked: never reached
_gc_lock = threading.Lock()
_gc_holders: list[tuple[int, int, int]] = []  # the thresholds saved by the first of the checks now running, once per check


@contextmanager
def fewer_full_collections() -> Iterator[None]:
    """Hold off the oldest generation's garbage collections for the block (see the module docstring); the thresholds
    are restored when the last of the blocks running at once (threads of a server) ends, however it ends."""
    with _gc_lock:
        saved = _gc_holders[0] if _gc_holders else gc.get_threshold()
        _gc_holders.append(saved)
        gc.set_threshold(saved[0], saved[1], _NO_FULL_GC)
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders.pop()
            if not _gc_holders:
                gc.set_threshold(*saved)


def python_files(path: str) -> list[Path]:
    """The Python files ``path`` names: itself (a ``.py``/``.pyw`` file or a script with a python shebang), or every
    ``*.py`` under a directory in path order, hidden and build folders skipped; InvalidArgument otherwise."""
    p = Path(path)
    if p.is_dir():
        return sorted(_walk_py(p))
    if not p.exists():
        raise InvalidArgument(f"{path}: no such file or directory")
    if not p.is_file():
        raise InvalidArgument(f"{path}: not a file or directory")
    if p.suffix not in (".py", ".pyw") and not _python_shebang(p):
        raise InvalidArgument(f"{path}: not a Python file (expected a .py script)")
    return [p]


def _walk_py(root: Path) -> Iterator[Path]:
    """Every ``*.py`` file below ``root``, hidden and build folders skipped; a walk with its own stack (not a
    recursion: a tree 1,000 folders deep is walked like any other) that follows a linked folder once (a link back
    up the tree is not a loop)."""
    import os

    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            st = folder.stat()
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable, or gone meanwhile: as rglob, left out
        for entry in entries:
            try:
                if entry.is_dir():
                    if not (entry.name.startswith(".") or entry.name in _SKIP_DIRS):
                        stack.append(Path(entry.path))
                elif entry.name.endswith(".py") and entry.is_file():
                    yield Path(entry.path)
            except OSError:
                continue


def _python_shebang(p: Path) -> bool:
    try:
        with p.open("rb") as fh:
            first = fh.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


MAX_STDIN_BYTES = 64 * 2**20  # a script read from standard input: more is refused, not read to the end


def read_input(p: Path | None, label: str) -> bytes:
    """The bytes of file ``p``, or of standard input when None (at most :data:`MAX_STDIN_BYTES`: an endless stream
    is refused once past it, not read until memory runs out); InvalidArgument naming ``label`` when unreadable or
    over the limit."""
    try:
        if p is not None:
            return p.read_bytes()
        data = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    except (OSError, ValueError, AttributeError) as exc:
        raise InvalidArgument(f"{label}: cannot read: {exc}") from exc
    if len(data) > MAX_STDIN_BYTES:
        raise InvalidArgument(f"{label}: standard input holds more than {MAX_STDIN_BYTES // 2**20} MiB; check a file instead")
    return data


class UndecodableSource(ValueError):
    """A source Python itself would not decode: ``line`` (1-based) is where, ``args[0]`` says why."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


def read_source(data: bytes) -> str:
    """The text of a Python source file's bytes, decoded as Python decodes it (:func:`tokenize.detect_encoding`:
    a UTF-8 BOM, else a PEP 263 coding cookie on the first two lines, else UTF-8); newlines are left as they are.

    Raises UndecodableSource (with the line) for an unknown encoding, a cookie that contradicts the BOM, or bytes
    that are not valid in the encoding."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # unknown encoding, a BOM with another cookie, a first line that is not UTF-8
        if "invalid or missing encoding declaration" not in str(exc):
            raise UndecodableSource(str(exc)) from None
        encoding = "utf-8"  # the first lines are not UTF-8 and declare nothing: say which byte, as for later lines
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        name = codecs.lookup(encoding).name
        why = (
            "and no coding cookie (PEP 263) declares another encoding"
            if name in ("utf-8", "utf-8-sig")
            else "the encoding its coding cookie declares"
        )
        raise UndecodableSource(f"byte 0x{data[exc.start]:02x} at line {line} is not valid {name}, {why}", line) from None
    return text


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
            targets += [(f, str(f)) for f in python_files(path)]
    read: list[tuple[str, str | None]] = []  # (label, decoded text; None: undecodable, its own FSD000 instead)
    undecodable: dict[str, Finding] = {}
    for p, label in targets:
        try:
            read.append((label, read_source(read_input(p, label))))
        except UndecodableSource as exc:  # this file only: the others are still checked (and it is left out of the project)
            undecodable[label] = not_analysed(label, f"file not analysed: cannot decode it as Python does: {exc}", exc.line)
            read.append((label, None))
    with fewer_full_collections():
        return _check_read(read, undecodable, sel, ign)


def _check_read(
    read: list[tuple[str, str | None]], undecodable: dict[str, Finding], sel: list[str], ign: list[str]
) -> list[Finding]:
    """Findings for the files :func:`check_paths` read (text None: undecodable, its finding in ``undecodable``)."""
    sources = [(label, text) for label, text in read if text is not None]
    # several files: a project, whose helpers are followed from one file into another (one file: as before)
    project = Project.build(sources, budget_s=check_budget()) if len(sources) > 1 else None
    out: list[Finding] = []
    for label, text in read:
        if text is None:
            out += [undecodable[label]] if keep(NOT_ANALYSED, sel, ign) else []
        else:
            out += check_source(text, label, select=sel, ignore=ign, project=project)
    return out
