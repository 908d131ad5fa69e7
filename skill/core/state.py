"""Where fsdp-skill keeps state: ``$FSDP_SKILL_HOME`` or the user cache dir (``~/.cache/fsdp-skill``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fsdp_skill.errors import StateError
from fsdp_skill.runtime import cache, target

HOME_ENV = cache.HOME_ENV


def state_dir() -> Path:
    """The state directory (``$FSDP_SKILL_HOME`` or the user cache dir), created on first use.

    Raises StateError (one line naming the path) when it is a file, cannot be created or is not a
    writable directory.
    """
    path = cache.state_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        what = "is not a directory" if path.exists() else f"cannot be created ({exc.strerror or exc})"
        raise StateError(_unusable(path, what)) from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise StateError(_unusable(path, "is not writable"))
    return path


def _unusable(path: Path, what: str) -> str:
    return f"state directory {path} {what}; point ${HOME_ENV} at a writable directory (e.g. {HOME_ENV}=$HOME/.cache/fsdp-skill)"


def torch_version() -> str | None:
    """torch version of the target interpreter from package metadata (never imports torch); None if torch
    is absent there.  Raises InvalidArgument when the target interpreter is unusable."""
    return target.facts().torch_version


def target_python() -> str:
    """Absolute path of the target interpreter (``$FSDP_SKILL_PYTHON`` or the tool's own); raises
    InvalidArgument when it is unusable (probed once per process)."""
    return target.facts().python


def torch_dir() -> str | None:
    """Directory of the target interpreter's torch package (found without importing it), or None."""
    return target.facts().torch_dir


PYTHON_HELP = (
    "Python interpreter of your training environment: snippets run, and API signatures are read, "
    "under its torch (default: $FSDP_SKILL_PYTHON, else fsdp-skill's own interpreter)"
)


def use_python(path: str | None) -> str:
    """Select the target interpreter for this process and its children: validate ``path`` (``--python``;
    None keeps ``$FSDP_SKILL_PYTHON`` or the tool's own) and set ``$FSDP_SKILL_PYTHON`` to its absolute path.

    Returns that path.  Raises InvalidArgument, one line, when the interpreter does not exist, is not
    executable, is not a Python or is too old (an interpreter without torch is accepted).
    """
    if path is not None:
        os.environ[target.ENV] = target.check_python(path)
    return target_python()


def read_json(path: Path):
    """JSON content of ``path``, or None when missing or corrupt."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json_atomic(path: Path, data) -> None:
    """Write ``data`` as JSON atomically (see :func:`fsdp_skill.runtime.cache.atomic_write_text`)."""
    cache.atomic_write_text(path, json.dumps(data, ensure_ascii=False))
