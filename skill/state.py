"""Where fsdp-skill keeps state: ``$FSDP_SKILL_HOME`` or the user cache dir (``~/.cache/fsdp-skill``)."""
from __future__ import annotations

import functools
import json
import os
import tempfile
from pathlib import Path

HOME_ENV = "FSDP_SKILL_HOME"


def state_dir() -> Path:
    """The state directory (created on first use)."""
    env = os.environ.get(HOME_ENV)
    if env:
        path = Path(env)
    else:
        from platformdirs import user_cache_dir

        path = Path(user_cache_dir("fsdp-skill"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.lru_cache(maxsize=1)
def torch_version() -> str | None:
    """Installed torch version from package metadata (never imports torch); None if torch is absent.

    Read once per process (parsing package metadata costs ~2 ms)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def read_json(path: Path):
    """JSON content of ``path``, or None when missing or corrupt."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json_atomic(path: Path, data) -> None:
    """Write JSON so that readers see the old or the new file, never a torn one (tempfile + os.replace)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
