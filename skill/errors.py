"""The error tree of fsdp-skill: every error the core and the runtime raise on purpose is one of these.

    SkillError                   base of every error this project raises on purpose
    ├── InputError               the caller's input is wrong; fix the input and retry
    │   ├── QueryError           a question that cannot be answered as given (empty, too long, binary)
    │   ├── UsageError           a command's options that do not go together (``verify --all ID``, ``show``)
    │   ├── InvalidArgument      a bad argument: not a .py script, timeout <= 0, unknown backend/launcher
    │   ├── NotFoundError        an unknown section or snippet id (the message names close ids)
    │   └── MissingDependency    an optional part is not installed (the message names the extra to install)
    ├── KnowledgeError           a knowledge card is malformed (the message starts with file:line)
    ├── HarnessError             a verification run could not happen at all (launcher failed to start)
    ├── StateError               the state directory ($FSDP_SKILL_HOME) cannot be created or written
    ├── QueueFull                a bounded queue (the plan queue) has no place left; retry after ``retry_after_s``
    └── ExportRefused            export asked for snippets that did not pass verification on this host

A snippet that fails when run is *data* (``Verdict.status == "failed"``), never an exception.

Each adapter maps the tree once, by the first matching class in its own table:
``fsdp_skill.adapters.exitcodes`` (CLI exit code: InputError 2, the rest 1), the HTTP app
(InputError 400, NotFoundError 404, ExportRefused 409, QueueFull 429 with ``Retry-After``, HarnessError and
MissingDependency 503, KnowledgeError and StateError 500) and the MCP server (a tool error carrying the message). Lower-layer errors are translated where they are caught,
with ``raise ... from exc``.
"""

from __future__ import annotations


class SkillError(Exception):
    """Base of every error fsdp-skill raises on purpose."""


class InputError(SkillError):
    """The caller's input is wrong (exit code 2, HTTP 4xx); the message says what to change."""


class QueryError(InputError):
    """The question is empty, too long or not text."""


class UsageError(InputError):
    """A command's options or targets that do not go together, e.g. ``give snippet ids / paths or --topic, not
    both`` (CLI exit 2; the adapters that take a typed request never raise it)."""


class InvalidArgument(InputError):
    """An argument is out of range or of the wrong kind, e.g. ``timeout(0) must be > 0 seconds``."""


class NotFoundError(InputError):
    """A section or snippet id that the knowledge base does not hold."""


class MissingDependency(InputError):
    """A command needs a package that this installation lacks, e.g. ``serve`` without FastAPI.

    The message names the extra that provides it: ``pip install 'fsdp-skill[serve]'``.
    """


class KnowledgeError(SkillError):
    """A card could not be parsed; ``str(err)`` starts with ``path:line``."""

    def __init__(self, path: str, line: int, message: str):
        self.path, self.line = path, line
        super().__init__(f"{path}:{line}: {message}")


class HarnessError(SkillError):
    """A verification run could not happen at all (e.g. the warm launcher failed to start).

    A script that fails is not an error: it is a ``Verdict`` with ``status="failed"``.
    """


class StateError(SkillError):
    """The state directory (``$FSDP_SKILL_HOME`` or the user cache dir) is unusable: a file, not creatable
    or not writable (CLI exit 1, HTTP 500 ``state_error``); the message names the path and the fix."""


class QueueFull(SkillError):
    """A bounded queue has no place left (HTTP 429 with ``Retry-After``, an MCP tool error): e.g. the plan queue
    with one plan running and every waiting place taken.  Nothing was started; the same request may succeed
    later.  ``retry_after_s`` (whole seconds, at least 1) is the queue's estimate of when a place frees up."""

    def __init__(self, message: str, retry_after_s: int):
        self.retry_after_s = max(1, int(retry_after_s))
        super().__init__(message)


class ExportRefused(SkillError):
    """Some selected snippets did not pass verification and ``include_unverified`` was not given.

    ``refused`` lists ``(snippet id, verdict status, reason or None)``.
    """

    def __init__(self, refused: list[tuple[str, str, str | None]]):
        self.refused = refused
        names = "; ".join(f"{sid} ({status}{': ' + reason if reason else ''})" for sid, status, reason in refused)
        super().__init__(
            f"refusing to export {len(refused)} snippet(s) that did not pass verification on this host: "
            f"{names}. Pass --include-unverified (HTTP/MCP: include_unverified=true) to export them "
            f"marked NOT VERIFIED"
        )


__all__ = [
    "SkillError",
    "InputError",
    "QueryError",
    "InvalidArgument",
    "NotFoundError",
    "KnowledgeError",
    "HarnessError",
    "StateError",
    "QueueFull",
    "ExportRefused",
]
