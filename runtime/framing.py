"""A child's results told apart from everything else on its stdout (the parent's side of the protocol).

A child that runs under the user's interpreter (``probe.py``, ``introspect.py``, the planner's ``child.py``)
shares its stdout with code the tool does not control: a ``--python`` wrapper script that prints before it
execs Python, a ``--model`` factory that prints.  So the parent draws a fresh nonce per run
(:func:`new_nonce`) and passes it as ``--frame NONCE`` on the child's command line (arguments pass through a
wrapper's ``"$@"``, where a temporary file or the environment may not reach: a container, ``sudo``); the
child writes each result as one line::

    @fsdp-skill-result:NONCE {...JSON...}

and the parent reads only those (:func:`read`); the rest of stdout is the user's, kept for error messages
(:attr:`Framed.last_other`) and never parsed.  The tag may follow the user's text on the same line (a print
without a newline) and text after the JSON value is ignored.  File-run modules import nothing of the tool,
so each child spells the line itself; tests/test_framing.py checks they agree with
:data:`TAG`.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

TAG = "@fsdp-skill-result:"  # followed by the nonce, one space and the JSON value
FLAG = "--frame"  # the child's option that takes the nonce
_DECODER = json.JSONDecoder()


def new_nonce() -> str:
    """A fresh nonce for one child run: 32 hex digits, never guessed by the user's code."""
    return secrets.token_hex(16)


@dataclass(frozen=True)
class Framed:
    """A child's stdout split into its results and the rest."""

    results: list[Any] = field(default_factory=list)  # the decoded JSON values of the framed lines, in order
    malformed: int = 0  # framed lines whose value is not JSON
    other: list[str] = field(default_factory=list)  # every other non-blank line (the user's output), stripped

    @property
    def last_other(self) -> str | None:
        """The last line the user's code printed (for an error message), or None."""
        return self.other[-1] if self.other else None


def read(text: str, nonce: str) -> Framed:
    """Split ``text`` (a child's whole stdout) into the values framed with ``nonce`` and the other lines."""
    mark = f"{TAG}{nonce} "
    results: list[Any] = []
    other: list[str] = []
    malformed = 0
    for line in text.splitlines():
        at = line.find(mark)
        if at < 0:
            if line.strip():
                other.append(line.strip())
            continue
        if line[:at].strip():
            other.append(line[:at].strip())  # the user's print that had no newline
        try:
            value, _end = _DECODER.raw_decode(line, at + len(mark))
        except ValueError:
            malformed += 1
            continue
        results.append(value)
    return Framed(results=results, malformed=malformed, other=other)


def last_words(framed: Framed, stderr: str, code: int) -> str:
    """One line saying what a child that gave no usable result said instead: its last stderr line, else the last
    line of the user's output on stdout, else its exit code (at most 200 characters)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if lines:
        return lines[-1][:200]
    if framed.last_other:
        return f"it printed {framed.last_other[:200]!r}"
    return f"exit code {code} and no output"
