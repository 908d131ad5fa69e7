"""Where fsdp-skill keeps state: ``$FSDP_SKILL_HOME`` or the user cache dir (``~/.cache/fsdp-skill``)."""
from __future__ import annotations

import json
from pathlib import Path

from fsdp_skill.runtime import cache, host

HOME_ENV = cache.HOME_ENV


def state_dir() -> Path:
    """The state directory (``$FSDP_SKILL_HOME`` or the user cache dir), created on first use."""
    path = cache.state_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


def torch_version() -> str | None:
    """Installed torch version from package metadata (never imports torch); None if torch is absent."""
    version = host.torch_version()
    return None if version == "absent" else version


def read_json(path: Path):
    """JSON content of ``path``, or None when missing or corrupt."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json_atomic(path: Path, data) -> None:
    """Write ``data`` as JSON atomically (see :func:`fsdp_skill.runtime.cache.atomic_write_text`)."""
    cache.atomic_write_text(path, json.dumps(data, ensure_ascii=False))
