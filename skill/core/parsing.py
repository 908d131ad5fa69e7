"""``ast.parse`` that is safe to call from several threads at once (the HTTP server's and MCP server's worker threads).

Every parse of the tool's own (the checker, ``ask``'s fenced code, the fixer, the message atlas) goes through
:func:`parse_module` or :func:`parse_expression`.

Why: CPython 3.11.0-3.11.7 and 3.12.0-3.12.1 keep the AST constructor's recursion counter in state the whole
interpreter shares, not per thread (https://github.com/python/cpython/issues/106905; fixed by
https://github.com/python/cpython/pull/113035 in 3.11.8 and 3.12.2).  When a garbage collection during one thread's
``ast.parse`` runs a finaliser and the interpreter switches to another thread that parses too, the first thread's
counter comes back changed and its parse of valid code raises ``SystemError: AST constructor recursion depth
mismatch (before=33, after=29)``.  So every parse here holds one process-wide lock, and a parse that still meets that
error (a library parsing outside the lock at the same moment, e.g. 3.11's traceback formatting) is tried again, up to
:data:`ATTEMPTS` times; after that the SystemError propagates for the caller to report (the checker: an ``FSD000``).
"""

from __future__ import annotations

import ast
import threading

ATTEMPTS = 3  # parses of one text that met the recursion-counter error before it is given up
_LOCK = threading.RLock()  # re-entrant: a finaliser run during a parse in the same thread may parse too
_RACE = "recursion depth mismatch"


def _parse(source: str, filename: str, mode: str) -> ast.AST:
    for attempt in range(ATTEMPTS):
        try:
            with _LOCK:  # a NUL in a display name (any str a client sends) is no reason to refuse the code itself
                return ast.parse(source, filename=filename.replace("\x00", "\\x00"), mode=mode)
        except SystemError as exc:
            if _RACE not in str(exc) or attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")  # the loop returns or raises


def parse_module(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)`` under the parse lock (see the module docstring).

    Raises what ``ast.parse`` raises: SyntaxError, ValueError (null bytes), RecursionError or MemoryError (nested too
    deeply), and SystemError when CPython's recursion-counter race (gh-106905) hit all :data:`ATTEMPTS` parses."""
    tree = _parse(source, filename, "exec")
    assert isinstance(tree, ast.Module)
    return tree


def parse_expression(source: str) -> ast.expr:
    """The expression ``source`` (``ast.parse(source, mode="eval").body``) under the parse lock; raises as
    :func:`parse_module`."""
    tree = _parse(source, "<unknown>", "eval")
    assert isinstance(tree, ast.Expression)
    return tree.body
