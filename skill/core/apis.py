"""Live API signatures from the *target* interpreter's torch, cached per interpreter and torch version.

Resolving a name imports torch (seconds), so results are kept in
``$FSDP_SKILL_HOME/api-<torch version>-<interpreter hash>-v<API_FORMAT>.json``; a name is introspected
once per interpreter and torch version, and the cached path of ``ask`` never imports torch.  The target is
the selected interpreter (:func:`fsdp_skill.runtime.target.python`): for the tool's own one names are
introspected in-process; for another (``--python PATH``) by running the standard-library script
:mod:`fsdp_skill.runtime.introspect` under it.  Without torch there, every name is ``available=False``
with a ``reason`` saying how to get signatures.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from collections.abc import Callable
from typing import Any

from fsdp_skill.core.models import ApiInfo
from fsdp_skill.core.state import read_json, state_dir, write_json_atomic
from fsdp_skill.errors import HarnessError
from fsdp_skill.runtime import framing, target
from fsdp_skill.runtime import introspect as _script

API_FORMAT = 4  # 4: signatures without object addresses; version of the cached ApiInfo form (part of the cache file name); bump when introspect changes
INTROSPECT_TIMEOUT_S = 600.0  # importing torch in a cold interpreter on a loaded machine
resolve = _script.resolve
# runtime/introspect.py is a file-run script (standard library only, unannotated): the types of the two calls made here
_describe: Callable[[str], dict[str, str | bool | None]] = _script.describe
_torch_import_error: Callable[[], str | None] = _script.torch_import_error


def introspect(name: str) -> ApiInfo:
    """Signature and first docstring paragraph of ``name`` in *this* interpreter's torch (imports it)."""
    return ApiInfo.from_data(_describe(name))


def introspect_in(python: str, names: list[str]) -> list[ApiInfo]:
    """ApiInfo of each name, read by running the introspection script under interpreter ``python``.

    Only the result line framed with this run's nonce is read (:mod:`fsdp_skill.runtime.framing`): a wrapper
    script's own output is not taken for it.  Raises HarnessError, one line naming ``python``, when the
    interpreter fails or gives no result (its last stderr line, else its last output, is quoted) or a malformed one.
    """
    import subprocess  # only on a cache miss for another interpreter

    nonce = framing.new_nonce()
    try:
        proc = subprocess.run(
            [python, _script.__file__, framing.FLAG, nonce, *names],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=INTROSPECT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HarnessError(f"cannot read API signatures from {python}: {exc}") from exc
    framed = framing.read(proc.stdout.decode("utf-8", "replace"), nonce)
    if proc.returncode != 0 or not framed.results:
        last = framing.last_words(framed, proc.stderr.decode("utf-8", "replace"), proc.returncode)
        raise HarnessError(f"cannot read API signatures from {python}: {last}")
    rows = framed.results[-1]
    try:
        infos = [ApiInfo.from_data(r) for r in rows]
    except (ValueError, TypeError) as exc:
        raise HarnessError(
            f"cannot read API signatures from {python}: its result is malformed ({(str(exc).splitlines() or [type(exc).__name__])[0]})"
        ) from exc
    if [i.name for i in infos] != list(names):
        raise HarnessError(f"cannot read API signatures from {python}: its result does not answer the {len(names)} name(s) asked")
    return infos


_SHARED: dict[tuple[str, str], ApiCache] = {}
_API_FIELDS = tuple(f.name for f in dataclasses.fields(ApiInfo))


def api_cache() -> ApiCache:
    """The process-wide ApiCache of the selected interpreter and the current state directory.

    Raises InvalidArgument when the selected interpreter is unusable (see :func:`fsdp_skill.runtime.target.facts`).
    """
    facts = target.facts()
    key = (str(state_dir()), facts.python)
    cache = _SHARED.get(key)
    if cache is None or cache.version != (facts.torch_version or "none"):
        cache = _SHARED[key] = ApiCache(facts)
    return cache


class ApiCache:
    """ApiInfo per name for one interpreter's torch, persisted as JSON in the state directory."""

    def __init__(self, facts: target.Facts | None = None):
        self.facts = facts or target.facts()
        self.version = self.facts.torch_version or "none"
        ident = hashlib.sha256(self.facts.python.encode()).hexdigest()[:12]
        self.path = state_dir() / f"api-{self.version}-{ident}-v{API_FORMAT}.json"
        data = read_json(self.path) if self.facts.torch_version else None
        self.entries: dict[str, dict[str, Any]] = data if isinstance(data, dict) else {}
        # name -> (the entry that passed ApiInfo.from_data, the record's field values): a record is built from those
        # directly next time (its fields are strings, booleans and None), for as long as the entry is the same object
        self._checked: dict[str, tuple[object, dict[str, Any]]] = {}

    def _fresh(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """Introspect ``names``; raises HarnessError (nothing is cached then) when torch does not import."""
        if self.facts.python == os.path.abspath(sys.executable):  # this interpreter: no subprocess
            broken = _torch_import_error()
            if broken:
                raise HarnessError(f"cannot read API signatures from {self.facts.python}: {broken}")
            return {n: introspect(n).model_dump() for n in names}
        return {i.name: i.model_dump() for i in introspect_in(self.facts.python, names)}

    def get(self, names: list[str]) -> list[ApiInfo]:
        """ApiInfo for each name, introspecting (and importing torch) only for names not cached yet.

        Without torch in the interpreter, or when a foreign interpreter's torch cannot be introspected, each
        missing name is ``available=False`` with the ``reason`` (nothing is stored); never raises for that.
        """
        if self.facts.torch_version is None:
            reason = target.no_torch_reason(self.facts.python)
            return [ApiInfo(name=n, available=False, reason=reason) for n in names]
        missing = [n for n in names if n not in self.entries]
        if missing:
            try:
                fresh = self._fresh(missing)
            except HarnessError as exc:  # torch there is broken: answer without signatures, store nothing
                return [
                    ApiInfo.from_data(self.entries[n]) if n in self.entries else ApiInfo(name=n, available=False, reason=str(exc))
                    for n in names
                ]
            self.entries.update(fresh)
            current = read_json(self.path)
            merged = {**(current if isinstance(current, dict) else {}), **self.entries}
            try:
                write_json_atomic(self.path, merged)
            except OSError:
                pass  # e.g. a directory where the cache file should be: a miss next time, never a failure
        out = []
        for n in names:
            entry = self.entries.get(n)
            known = self._checked.get(n)
            if known is not None and known[0] is entry:  # this entry was checked before: a new record of its values
                out.append(ApiInfo(**known[1]))
                continue
            try:
                info = ApiInfo.from_data(entry)
            except (ValueError, KeyError):  # a corrupt entry: introspect again next time
                self.entries.pop(n, None)
                out.append(ApiInfo(name=n, available=False, summary="cache entry was corrupt; retry"))
                continue
            self._checked[n] = (entry, {f: getattr(info, f) for f in _API_FIELDS})
            out.append(info)
        return out
