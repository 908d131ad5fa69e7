"""On-disk cache of verdicts: one JSON file per :class:`VerdictKey` (code, world_size, backend, torch version,
interpreter, launcher, and the environment variables that change a distributed run's outcome).

Files live in ``<state dir>/verdicts/<key>.json`` where the state dir is ``$FSDP_SKILL_HOME`` or
``platformdirs.user_cache_dir("fsdp-skill")``.  Writes go to a temp file in the same directory and are
moved into place with ``os.replace``, so concurrent writers never leave a torn file and readers see the
old or the new verdict.  A file is trusted only as far as it agrees with the key it was looked up with
(:func:`load`): an unreadable, invalid or mismatching file is a miss, rewritten by the next store.
Only ``passed``, ``failed`` and ``timeout`` verdicts are stored; a harness error never reaches here.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fsdp_skill.runtime import knobs
from fsdp_skill.runtime.models import Verdict

CACHED_STATUSES = ("passed", "failed", "timeout")
# 2: warm ranks finalize the interpreter at exit (verdicts of the fast exit are not reused)
# 3: keyed by the target interpreter too (verdicts carry python, cuda/nccl availability, device count)
# 4: keyed by the launcher and the c10d/gloo/NCCL environment too (see OUTCOME_ENV)
_SCHEMA = 4
# Environment variables that change how c10d, gloo or NCCL behave, so a verdict recorded under them says
# nothing about a run without them (e.g. GLOO_SOCKET_IFNAME=nonexistent fails every gloo run), and the warm
# launcher's exit mode (FSDP_SKILL_WARM_EXIT=fast cannot see a crash in interpreter teardown).
# What the ranks inherit that changes how a run ends: c10d/gloo/NCCL settings, what Python imports at start-up
# (PYTHONPATH: a sitecustomize there runs in every rank), the dynamic loader's preloads and paths, thread
# counts, visible devices, every TORCH_* switch, and the warm launcher's exit mode.
OUTCOME_ENV = re.compile(
    r"^(?:[A-Z0-9_]*_SOCKET_IFNAME|NCCL_\w*|TORCH_\w*|GLOO_\w*|MASTER_ADDR|"
    + re.escape(knobs.WARM_EXIT)
    + r"|PYTHONPATH|PYTHONHOME|PYTHONUSERBASE|PYTHONNOUSERSITE|PYTHONSAFEPATH|PYTHONWARNINGS"
    r"|LD_PRELOAD|LD_LIBRARY_PATH|OMP_NUM_THREADS|MKL_NUM_THREADS|CUDA_VISIBLE_DEVICES)$"
)
_SHA = re.compile(r"^[0-9a-f]{64}$")


def state_path() -> Path:
    """The state directory's path: ``$FSDP_SKILL_HOME`` or the user cache dir; neither created nor checked here
    (:func:`fsdp_skill.core.state.state_dir` does both, for the skill layer)."""
    env = os.environ.get(knobs.HOME)
    if env:
        return Path(env)
    return _user_cache_path(os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))


@functools.lru_cache(maxsize=8)
def _user_cache_path(xdg_cache_home: str | None, home: str | None) -> Path:
    """platformdirs' user cache dir of fsdp-skill, memoised on the variables it reads on Linux (every ask asks)."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("fsdp-skill"))


@functools.lru_cache(maxsize=256)
def code_sha256(code: str) -> str:
    """SHA-256 hex digest of the UTF-8 bytes of ``code`` (memoised: every answer hashes its snippets' code)."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def outcome_env(environ: Mapping[str, str] | None = None) -> str:
    """SHA-256 hex digest of the sorted (name, value) pairs of ``environ`` (default: ``os.environ``) whose
    names match :data:`OUTCOME_ENV`; the digest of an empty list when none is set."""
    env = os.environ if environ is None else environ
    pairs = sorted((k, v) for k, v in env.items() if OUTCOME_ENV.match(k))
    return hashlib.sha256(json.dumps(pairs).encode()).hexdigest()


def cache_key(
    code_sha: str,
    world_size: int,
    backend: str,
    torch_version: str,
    python: str,
    launcher: str = "warm",
    env: str = "",
    dry_run: str | None = None,
) -> str:
    """Key of one verdict: SHA-256 over the code hash, world_size, resolved backend, the target
    interpreter's torch version and absolute path, the launcher ('warm' | 'torchrun'), the
    :func:`outcome_env` digest ``env`` and the dry run ('cpu', or None for a real run), so verdicts of
    different environments never mix and a dry run's never answers for a real run (nor the reverse)."""
    fields = [_SCHEMA, code_sha, world_size, backend, torch_version, python, launcher, env]
    material = json.dumps(fields + ([dry_run] if dry_run is not None else []))
    return hashlib.sha256(material.encode()).hexdigest()


@dataclass(frozen=True)
class VerdictKey:
    """What a cached verdict is looked up by; a loaded verdict must agree with it (see :func:`load`)."""

    code_sha: str
    world_size: int
    backend: str
    torch_version: str
    python: str
    launcher: str = "warm"
    env: str = ""  # outcome_env() of the caller
    dry_run: str | None = None  # Job.dry_run: 'cpu' for a CPU dry run's verdict

    @property
    def name(self) -> str:
        """The file stem: :func:`cache_key` of the fields."""
        return cache_key(
            self.code_sha, self.world_size, self.backend, self.torch_version, self.python, self.launcher, self.env, self.dry_run
        )


def _path(key: VerdictKey) -> Path:
    return state_path() / "verdicts" / f"{key.name}.json"


def _agrees(verdict: Verdict, key: VerdictKey) -> bool:
    """Whether a stored verdict belongs to ``key`` and is sane: same code hash, world_size, backend, torch
    version, interpreter and dry run; a cacheable status; finite seconds >= 0; ranks within the world; a pass with
    every rank exiting 0; a launcher the key allows (a warm key also holds the torchrun verdict that
    confirmed a warm timeout)."""
    if verdict.status not in CACHED_STATUSES or not verdict.available or verdict.dry_run != key.dry_run:
        return False
    if (verdict.code_sha256, verdict.world_size, verdict.backend, verdict.python) != (
        key.code_sha,
        key.world_size,
        key.backend,
        key.python,
    ):
        return False
    if not same_torch(verdict.torch_version, key.torch_version):
        return False
    if not _SHA.match(key.code_sha) or key.world_size < 1:
        return False
    allowed = ("warm", "torchrun") if key.launcher == "warm" else (key.launcher,)
    if verdict.launcher not in allowed:
        return False
    if verdict.seconds is None or not math.isfinite(verdict.seconds) or verdict.seconds < 0:
        return False
    ranks = [r.rank for r in verdict.ranks]
    if len(set(ranks)) != len(ranks) or any(not 0 <= r < key.world_size for r in ranks):
        return False
    if verdict.status == "passed":
        return len(ranks) == key.world_size and all(r.exit_code == 0 and r.signal is None for r in verdict.ranks)
    return True


def same_torch(ran: str | None, keyed: str) -> bool:
    """Whether a verdict whose ranks reported ``torch.__version__`` ``ran`` belongs to a key made from the package
    metadata's version ``keyed``: equal, or ``ran`` is ``keyed`` plus the local label the wheel's metadata lacks
    (PyPI's CUDA wheels: metadata '2.14.1', ``torch.__version__`` '2.14.1+cu130').  Without this a verdict made on
    such a torch never matched its own key, and every ``ask`` ran its snippets again."""
    if ran is None:
        return False
    return ran == keyed or ("+" not in keyed and ran.startswith(keyed + "+"))


def load(key: VerdictKey) -> Verdict | None:
    """The cached verdict for ``key`` with ``cached=True``, or None on a miss, a corrupt file, or a file
    that does not agree with ``key`` (another code hash, world size, backend, torch, interpreter or
    launcher; a negative or non-finite time; a status that is never cached)."""
    try:
        text = _path(key).read_text(encoding="utf-8")
        verdict = Verdict.from_json(text)
    except (OSError, ValueError):
        return None
    if not _agrees(verdict, key):
        return None
    return verdict.model_copy(update={"cached": True})


def store(key: VerdictKey, verdict: Verdict) -> bool:
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
    import tempfile  # only to write: a cached ask reads

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
