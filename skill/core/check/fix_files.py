"""``check --fix`` / ``--diff`` on paths: :func:`fix_paths` checks and fixes files in memory (:class:`FileFix`), and
:meth:`FileFix.write` writes a result back (in the encoding the file was read in, as Python reads it: a byte order
mark and a PEP 263 coding cookie's encoding kept; line endings are the text's own)."""

from __future__ import annotations

import io
import sys
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fsdp_skill.core.check.engine import check_source, not_analysed
from fsdp_skill.core.check.files import UndecodableSource, python_files, read_input, read_source
from fsdp_skill.core.check.fix import FixResult, fix_source
from fsdp_skill.core.check.models import Finding
from fsdp_skill.core.check.rules import NOT_ANALYSED
from fsdp_skill.core.check.selection import validate_codes
from fsdp_skill.errors import InvalidArgument


@dataclass(slots=True)
class FileFix:
    """``--fix`` / ``--diff`` on one file: its text before, the fix result, and the findings left in the fixed text."""

    path: str  # the file as given ('-': standard input)
    before: str
    result: FixResult
    remaining: list[Finding]  # check_source of the fixed text (of the text itself when nothing was fixed)
    bom: bool = False  # the file starts with a UTF-8 byte order mark (written back with it)
    encoding: str = "utf-8"  # what the file was decoded with (its coding cookie's; written back in it)

    def write(self) -> None:
        """Write the fixed text back in place (in its encoding, the byte order mark kept); nothing when nothing changed.

        Raises InvalidArgument when the file cannot be written."""
        if not self.result.changed or self.path == "-":
            return
        data = self.result.source.encode("utf-8" if self.encoding == "utf-8-sig" else self.encoding)
        try:
            Path(self.path).write_bytes(b"\xef\xbb\xbf" + data if self.bom else data)
        except OSError as exc:
            raise InvalidArgument(f"{self.path}: cannot write the fix: {exc}") from exc


def fix_paths(paths: Iterable[str], *, select: Iterable[str] | None = None, ignore: Iterable[str] | None = None) -> list[FileFix]:
    """Check and fix (in memory) files, directories (every ``*.py`` below, as ``check`` walks them) and ``'-'``;
    :meth:`FileFix.write` writes a result back.  Every path is validated first (InvalidArgument, as check_paths);
    a file that does not parse is left as it is (its FSD000 remains)."""
    sel, ign = validate_codes(select), validate_codes(ignore)
    paths = list(paths)
    if not paths:
        raise InvalidArgument("give at least one PATH (a file, a directory, or '-' for standard input)")
    targets: list[tuple[object, str]] = []
    for path in paths:
        targets += [(None, "-")] if path == "-" else [(f, str(f)) for f in python_files(path)]
    out = []
    for p, label in targets:
        if p is None and sys.stdin is None:
            raise InvalidArgument("'-' reads the script from standard input, which is closed")
        data = read_input(p if isinstance(p, Path) else None, label)
        bom = data[:3] == b"\xef\xbb\xbf"
        try:
            text = read_source(data)
        except UndecodableSource as exc:  # left as it is, as check reports it; the other files are still fixed
            found = [not_analysed(label, f"file not analysed: cannot decode it as Python does: {exc}", exc.line)]
            out.append(FileFix(label, "", FixResult(""), found, bom))
            continue
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0] if not data.isascii() else "utf-8"
        found = check_source(text, label, select=sel, ignore=ign)
        if any(f.code == NOT_ANALYSED for f in found):
            result = FixResult(text)
        else:
            result = fix_source(text, found)
        remaining = check_source(result.source, label, select=sel, ignore=ign) if result.changed else found
        out.append(FileFix(label, text, result, remaining, bom, encoding))
    return out
