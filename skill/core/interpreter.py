"""The target interpreter: the Python of the user's training environment (``--python`` / ``$FSDP_SKILL_PYTHON``,
else the tool's own), under which snippets run and API signatures are read, and the facts of its torch.

Thin over :mod:`fsdp_skill.runtime.target`, which probes the interpreter once per process (never importing torch).
"""

from __future__ import annotations

import os

from fsdp_skill.runtime import knobs, target


def torch_version() -> str | None:
    """torch version of the target interpreter from package metadata (never imports torch); None if torch
    is absent there.  Raises InvalidArgument when the target interpreter is unusable."""
    return target.facts().torch_version


def torch_build() -> str | None:
    """'cuda' or 'cpu': whether the target interpreter's torch is a CUDA build (from its files, never importing
    it); None if torch is absent there."""
    facts = target.facts()
    if facts.torch_version is None:
        return None
    return "cuda" if facts.cuda_build else "cpu"


def target_python() -> str:
    """Absolute path of the target interpreter (``$FSDP_SKILL_PYTHON`` or the tool's own); raises
    InvalidArgument when it is unusable (probed once per process)."""
    return target.facts().python


def torch_dir() -> str | None:
    """Directory of the target interpreter's torch package (found without importing it), or None."""
    return target.facts().torch_dir


def use_python(path: str | None) -> str:
    """Select the target interpreter for this process and its children: validate ``path`` (``--python``;
    None keeps ``$FSDP_SKILL_PYTHON`` or the tool's own) and set ``$FSDP_SKILL_PYTHON`` to its absolute path.

    Returns that path.  Raises InvalidArgument, one line, when the interpreter does not exist, is not
    executable, is not a Python or is too old (an interpreter without torch is accepted).
    """
    if path is not None:
        os.environ[knobs.PYTHON] = target.check_python(path)
    return target_python()
