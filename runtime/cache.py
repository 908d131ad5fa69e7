"""On-disk cache of verdicts: one JSON file per (code, world_size, backend, torch version, interpreter).

Files live in ``<state dir>/verdicts/<key>.json`` where the state dir is ``$FSDP_SKILL_HOME`` or
``platformdirs.user_cache_dir("fsdp-skill")``.  Writes go to a temp file in the same directory and are
moved into place with ``os.replace``, so concurrent writers never leave a torn file and readers see the
old or the new verdict.  An unreadable or invalid file is a miss (the next store rewrites it).
Only ``passed``, ``failed`` and ``timeout`` verdicts are stored; a harness error never reaches here.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from fsdp_skill.runtime.models import Verdict

HOME_ENV = "FSDP_SKILL_HOME"
CACHED_STATUSES = ("passed", "failed", "timeout")
# 2: warm ranks finalize the interpreter at exit (verdicts of the fast exit are not reused)
# 3: keyed by the target interpreter too (verdicts carry python, cuda/nccl availability, device count)
_SCHEMA = 3


def state_dir() -> Path:
    """The state directory: ``$FSDP_SKILL_HOME`` or the user cache dir (not created here)."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("fsdp-skill"))


def code_sha256(code: str) -> str:
    """SHA-256 hex digest of the UTF-8 bytes of ``code``."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def cache_key(code_sha: str, world_size: int, backend: str, torch_version: str, python: str) -> str:
    """Key of one verdict: SHA-256 over the code hash, world_size, resolved backend, and the target
    interpreter's torch version and absolute path, so verdicts of different environments never mix."""
    material = json.dumps([_SCHEMA, code_sha, world_size, backend, torch_version, python])
    return hashlib.sha256(material.encode()).hexdigest()


def _path(key: str) -> Path:
    return state_dir() / "verdicts" / f"{key}.json"


def load(key: str) -> Verdict | None:
    """The cached verdict for ``key`` with ``cached=True``, or None on a miss or a corrupt file."""
    try:
        text = _path(key).read_text(encoding="utf-8")
        verdict = Verdict.model_validate_json(text)
    except (OSError, ValueError):
        return None
    if verdict.status not in CACHED_STATUSES:
        return None
    return verdict.model_copy(update={"cached": True})


def store(key: str, verdict: Verdict) -> bool:
    """Store ``verdict`` atomically under ``key`` if its status is cacheable; returns whether it was written.

    An OSError (read-only or full disk) is swallowed: the cache is an optimisation, never a failure.
    """
    if verdict.status not in CACHED_STATUSES:
        return False
    data = verdict.model_copy(update={"cached": False}).model_dump_json(indent=1)
    try:
        atomic_write_text(_path(key), data)
    except OSError:
        return False
    return True


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` so readers see the old or the new file, never a torn one (tempfile + os.replace).

    Creates the parent directory; raises OSError when the disk refuses.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
