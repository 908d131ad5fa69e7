"""Parsing a checked file with the running interpreter's grammar, and code written for a newer Python.

The checker reads files with :func:`ast.parse`, whose grammar is the running Python's.  A project written for Python
3.12 is valid code that Python 3.10 or 3.11 cannot parse.  :func:`parse_source` lowers the PEP 695 constructs
(``type X = ...`` aliases, ``class C[T]:``, ``def f[T](...)``) line by line where the parser stops at one, which keeps
every line where it was and changes nothing the rules read (type parameters and aliases are not distributed code), and
parses again.  What it cannot lower (PEP 701 f-strings) :func:`newer_syntax` names, so that the file is reported as
"not analysed: needs Python 3.12", not as broken.
"""

from __future__ import annotations

import ast
import re
import sys

from fsdp_skill.core.parsing import parse_module

# (the oldest Python with the syntax, the start of a line that has it, what it is)
_PEP695 = (
    ((3, 12), re.compile(r"(\s*)type\s+([A-Za-z_]\w*)\s*(\[)?"), "a `type` alias statement (PEP 695)"),
    ((3, 12), re.compile(r"(\s*class\s+[A-Za-z_]\w*)\s*(\[)"), "a generic class (PEP 695)"),
    ((3, 12), re.compile(r"(\s*(?:async\s+)?def\s+[A-Za-z_]\w*)\s*(\[)"), "a generic function (PEP 695)"),
)
_MAX_LOWERED = 500  # lines lowered in one file before giving up (each costs one parse)


def _closing(text: str, start: int) -> int | None:
    """Index just past the ``]`` that closes the ``[`` at ``start`` on this line (None: it closes on another line)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _lowered_line(text: str) -> str | None:
    """The line without its PEP 695 syntax (``type X[T] = v`` -> ``X = v``; ``class C[T](B):`` -> ``class C(B):``;
    ``def f[T](x)`` -> ``def f(x)``), or None when the line has none that can be lowered here."""
    alias = _PEP695[0][1].match(text)
    if alias:
        rest = alias.end() - (1 if alias.group(3) else 0)
        if alias.group(3):
            end = _closing(text, rest)
            if end is None:
                return None
            rest = end
        after = text[rest:].lstrip()
        return f"{alias.group(1)}{alias.group(2)} {after}" if after.startswith("=") else None
    for _, pattern, _ in _PEP695[1:]:
        m = pattern.match(text)
        if m:
            end = _closing(text, m.start(2))
            return None if end is None else m.group(1) + text[end:]
    return None


def parse_source(code: str, path: str = "<string>") -> ast.Module:
    """``ast.parse(code)``, or, when it fails at PEP 695 syntax this Python lacks, the parse of the code with those
    constructs lowered (lines and line numbers kept).  Raises what ``ast.parse`` raises for the code as written
    (SyntaxError, ValueError for null bytes, RecursionError/MemoryError for code nested too deeply, SystemError
    when CPython's parser race (:mod:`fsdp_skill.core.parsing`) outlasted its retries) when lowering does
    not make it parse."""
    try:
        return parse_module(code, path)
    except SyntaxError as first:
        if sys.version_info >= (3, 12):
            raise
        lines = code.splitlines(keepends=True)
        exc: SyntaxError = first
        for _ in range(_MAX_LOWERED):
            at = (exc.lineno or 1) - 1
            for i in range(min(at, len(lines) - 1), max(-1, at - 3), -1):  # the line the parser stopped at, or just above
                new = _lowered_line(lines[i])
                if new is not None and new != lines[i]:
                    lines[i] = new
                    break
            else:
                raise first from None
            try:
                return parse_module("".join(lines), path)
            except SyntaxError as again:
                exc = again
        raise first from None


def newer_syntax(exc: SyntaxError) -> str | None:
    """What newer-Python syntax that :func:`parse_source` cannot lower made the parse fail (e.g. "an f-string that only
    Python 3.12 accepts (PEP 701)"), from the parser's message; None for any other syntax error."""
    if sys.version_info < (3, 12) and (exc.msg or "").startswith("f-string"):  # PEP 701: quotes and nesting in f-strings
        return "an f-string that only Python 3.12 accepts (PEP 701)"
    return None
