"""The error tree of fsdp-skill.

    SkillError                 base of every error this project raises on purpose
    ├── KnowledgeError         a knowledge card is malformed (message names file:line)
    ├── QueryError             the question cannot be answered as given (empty, too long, binary)
    ├── NotFoundError          an unknown section or snippet id
    └── HarnessError           a verification run could not happen at all (fsdp_skill.runtime.errors)

A snippet that fails when run is *data* (``Verdict.status == "failed"``), never an exception.
Adapters translate these: the CLI prints one line and exits non-zero, HTTP answers 4xx with a JSON body.
"""
from __future__ import annotations

from fsdp_skill.runtime.errors import HarnessError, SkillError


class KnowledgeError(SkillError):
    """A card could not be parsed; ``str(err)`` starts with ``path:line``."""

    def __init__(self, path: str, line: int, message: str):
        self.path, self.line = path, line
        super().__init__(f"{path}:{line}: {message}")


class QueryError(SkillError):
    """The question is empty, too long or not text."""


class NotFoundError(SkillError):
    """A section or snippet id that the knowledge base does not hold."""


__all__ = ["SkillError", "KnowledgeError", "QueryError", "NotFoundError", "HarnessError"]
