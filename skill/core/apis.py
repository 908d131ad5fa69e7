"""Live API signatures from the *installed* torch, cached per torch version.

Resolving a name imports torch (seconds), so results are kept in
``$FSDP_SKILL_HOME/api-<torch version>-v<API_FORMAT>.json``; a name is introspected once per torch version and the
cached path of ``ask`` never imports torch.
"""
from __future__ import annotations

import importlib
import inspect
import re

from fsdp_skill.core.models import ApiInfo
from fsdp_skill.core.state import read_json, state_dir, torch_version, write_json_atomic

SUMMARY_CHARS = 400
API_FORMAT = 1  # version of the cached ApiInfo form (part of the cache file name); bump when introspect changes


def resolve(name: str):
    """Import the longest module prefix of a dotted ``name`` and getattr the rest.

    Returns the object; raises ``LookupError`` when any part is missing.
    """
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                raise LookupError(f"{name}: {'.'.join(parts[:cut])} has no attribute {attr!r}") from None
        return obj
    raise LookupError(f"{name}: no importable module prefix")


def introspect(name: str) -> ApiInfo:
    """Signature and first docstring paragraph of ``name`` in this interpreter's torch."""
    try:
        obj = resolve(name)
    except LookupError:
        return ApiInfo(name=name, available=False, summary="not found in the installed torch")
    try:
        target = obj
        if inspect.isclass(obj):
            signature = f"{obj.__name__}{inspect.signature(obj)}"
        else:
            signature = f"{getattr(obj, '__name__', name.rsplit('.', 1)[-1])}{inspect.signature(target)}"
    except (TypeError, ValueError):
        signature = None
    doc = inspect.getdoc(obj) or ""
    summary = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0].replace("\n", " ").strip() if doc else None
    if summary and len(summary) > SUMMARY_CHARS:
        summary = summary[: SUMMARY_CHARS - 1].rstrip() + "…"
    return ApiInfo(name=name, signature=signature, summary=summary, available=True)


_SHARED: dict[str, ApiCache] = {}


def api_cache() -> ApiCache:
    """The process-wide ApiCache for the installed torch and the current state directory."""
    key = str(state_dir())
    cache = _SHARED.get(key)
    if cache is None:
        _SHARED.clear()
        cache = _SHARED[key] = ApiCache()
    return cache


class ApiCache:
    """ApiInfo per name for the installed torch version, persisted as JSON in the state directory."""

    def __init__(self):
        self.version = torch_version() or "none"
        self.path = state_dir() / f"api-{self.version}-v{API_FORMAT}.json"
        data = read_json(self.path)
        self.entries: dict[str, dict] = data if isinstance(data, dict) else {}

    def get(self, names: list[str]) -> list[ApiInfo]:
        """ApiInfo for each name, introspecting (and importing torch) only for names not cached yet."""
        missing = [n for n in names if n not in self.entries]
        if missing:
            if self.version == "none":
                fresh = {n: ApiInfo(name=n, available=False, summary="torch is not installed").model_dump() for n in missing}
            else:
                fresh = {n: introspect(n).model_dump() for n in missing}
            self.entries.update(fresh)
            current = read_json(self.path)
            merged = {**(current if isinstance(current, dict) else {}), **self.entries}
            write_json_atomic(self.path, merged)
        out = []
        for n in names:
            try:
                out.append(ApiInfo.model_validate(self.entries[n]))
            except ValueError:  # a corrupt entry: introspect again next time
                self.entries.pop(n, None)
                out.append(ApiInfo(name=n, available=False, summary="cache entry was corrupt; retry"))
        return out
