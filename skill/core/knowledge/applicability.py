"""Which torch versions a knowledge section applies to, and what an answer says on another torch.

A section declares ``torch: ">=2.6"`` (a PEP 440 specifier) in its metadata when its API or behaviour
needs that range; sections without it claim nothing beyond "verified on the torch we test".
"""

from __future__ import annotations

import functools

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


def parse_spec(text: str) -> SpecifierSet:
    """``text`` as a SpecifierSet; raises ValueError with the reason for a malformed specifier."""
    try:
        spec = SpecifierSet(text)
    except InvalidSpecifier as exc:
        raise ValueError(f"'torch' must be a version specifier like '>=2.6' (got {text!r})") from exc
    if not str(spec):
        raise ValueError(f"'torch' must be a version specifier like '>=2.6' (got {text!r})")
    return spec


@functools.lru_cache(maxsize=512)
def applies(spec: str | None, torch_version: str | None) -> tuple[bool | None, str | None]:
    """(applies, note) for a section's ``torch`` specifier and a torch version such as '2.4.1+cu121'.

    A pure function of its two strings, memoised (every answer asks it for each of its sections).

    ``applies`` is None when either is unknown (no specifier, torch absent or unparsable); ``note`` says
    e.g. "needs torch >=2.6; yours is 2.4.1" when the version is outside the range, else None.  Local
    version labels (+cpu, +cu121) and pre-releases count as their release (2.6.0a0 satisfies >=2.6).
    """
    if not spec or not torch_version:
        return None, None
    try:
        release = Version(Version(torch_version).base_version)
    except InvalidVersion:
        return None, None
    if SpecifierSet(spec).contains(release, prereleases=True):
        return True, None
    return False, f"needs torch {spec}; yours is {torch_version}"
