"""Where fsdp-skill keeps state: ``$FSDP_SKILL_HOME`` or the user cache dir (``~/.cache/fsdp-skill``), and reading
and writing the JSON files there."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fsdp_skill.errors import StateError
from fsdp_skill.runtime import cache, knobs

HOME_ENV = knobs.HOME


def state_dir() -> Path:
    """The state directory (``$FSDP_SKILL_HOME`` or the user cache dir), created on first use.

    Raises StateError (one line naming the path) when it is a file, cannot be created or is not a
    writable directory.
    """
    path = cache.state_path()
    if path in _USABLE and os.path.isdir(path):  # checked before in this process (one stat: every ask asks)
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        what = "is not a directory" if path.exists() else f"cannot be created ({exc.strerror or exc})"
        raise StateError(_unusable(path, what)) from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise StateError(_unusable(path, "is not writable"))
    _USABLE.add(path)
    return path


_USABLE: set[Path] = set()  # state directories found usable (a directory, writable) in this process


def _unusable(path: Path, what: str) -> str:
    return f"state directory {path} {what}; point ${HOME_ENV} at a writable directory (e.g. {HOME_ENV}=$HOME/.cache/fsdp-skill)"


def read_json(path: Path) -> object:
    """JSON content of ``path`` (any JSON value: the caller checks its shape), or None when missing or corrupt
    (not UTF-8 text, not JSON)."""
    try:
        # bytes decoded as UTF-8, not read_text: its newline translation costs ~5 ms per MB of the cached ask's
        # files, and JSON reads "\r\n" between values as it reads "\n" (inside a string both are refused)
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return None


def write_json_atomic(path: Path, data: object) -> None:
    """Write ``data`` (a JSON-serialisable value; ``TypeError`` otherwise) as JSON atomically (see
    :func:`fsdp_skill.runtime.cache.atomic_write_text`)."""
    cache.atomic_write_text(path, json.dumps(data, ensure_ascii=False))
