"""Exit codes of the ``fsdp-skill`` command and the one mapping from the error tree to them.

  0  answered (or the command succeeded)
  1  a verdict failed or timed out (``verify``; ``export --all/--topic``: a snippet that can run here did
     not pass), an unusable state directory (``$FSDP_SKILL_HOME`` a file, not creatable or read-only),
     a port already in use (``serve``), or an internal error (bad knowledge card, harness)
  2  bad usage or bad input (empty / oversized / binary question, unknown id, not a .py script, ...),
     or a command whose optional part is not installed (the message names the extra)
  3  ``ask`` abstained: the question is outside FSDP / torch.distributed (the answer says why)
130  interrupted (Ctrl-C)
"""

from __future__ import annotations

from fsdp_skill.errors import InputError, KnowledgeError, MissingDependency, NotFoundError, SkillError, StateError

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_ABSTAINED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

# The error tree -> (exit code, JSON "code"); most specific first, SkillError itself last.
ERROR_EXITS: list[tuple[type[SkillError], int, str]] = [
    (NotFoundError, EXIT_USAGE, "not_found"),
    (MissingDependency, EXIT_USAGE, "missing_dependency"),
    (InputError, EXIT_USAGE, "bad_input"),
    (KnowledgeError, EXIT_FAIL, "knowledge_error"),
    (StateError, EXIT_FAIL, "state_error"),
    (SkillError, EXIT_FAIL, "error"),
]


def exit_for(exc: SkillError) -> tuple[int, str]:
    """(exit code, JSON error code) of an error of the tree (see :data:`ERROR_EXITS`)."""
    for cls, code, name in ERROR_EXITS:
        if isinstance(exc, cls):
            return code, name
    return EXIT_FAIL, "error"
