"""Which torch versions a knowledge section applies to, and what an answer says on another torch.

A section declares ``torch: ">=2.6"`` (a PEP 440 specifier) in its metadata when its API or behaviour
needs that range; sections without it claim nothing beyond "verified on the torch we test".

``packaging`` decides every case; the common one (clauses like ``>=2.6`` / ``<2.8`` / ``==2.6`` / ``!=2.7.1``
of plain release numbers, and a torch version such as ``2.13.0+cpu`` or ``2.6.0a0+git1234``) is compared on
release numbers without importing it, which a cached ``ask`` would otherwise pay for on every start
(tests/test_applicability.py holds the two equal).
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

# a clause of plain release numbers, and a version string whose release packaging reads the same way
_CLAUSE = re.compile(r"\s*(>=|<=|==|!=|<|>)\s*(\d+(?:\.\d+)*)(\.\*)?\s*")
_VERSION = re.compile(r"(\d+(?:\.\d+)*)(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?(?:\+[a-z0-9]+(?:\.[a-z0-9]+)*)?")
_OPS: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}


def parse_spec(text: str) -> SpecifierSet:
    """``text`` as a SpecifierSet; raises ValueError with the reason for a malformed specifier."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(text)
    except InvalidSpecifier as exc:
        raise ValueError(f"'torch' must be a version specifier like '>=2.6' (got {text!r})") from exc
    if not str(spec):
        raise ValueError(f"'torch' must be a version specifier like '>=2.6' (got {text!r})")
    return spec


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a torch version string, without trailing zeros, so that labels, pre-releases and
    padding do not tell two builds of one release apart: '2.14.1+cu130' and '2.14.1' -> (2, 14, 1); '2.6' and
    '2.6.0' -> (2, 6); () for a string that is not a version.  The one place the package compares releases."""
    match = _VERSION.fullmatch(version.strip().lower())
    numbers = list(_release(match.group(1))) if match else []
    while numbers and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def _padded(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))


def _plain_contains(spec: str, torch_version: str) -> bool | None:
    """Whether the release of ``torch_version`` satisfies ``spec`` when both have the plain forms above (what
    packaging's ``SpecifierSet(spec).contains(Version(v.base_version), prereleases=True)`` gives them), else None."""
    version = _VERSION.fullmatch(torch_version.strip().lower())
    clauses = [_CLAUSE.fullmatch(part) for part in spec.split(",")]
    if version is None or not clauses or not all(clauses):
        return None
    release = _release(version.group(1))
    for clause in clauses:
        assert clause is not None  # all() above
        if clause.group(3):  # a prefix match: '==2.6.*' holds 2.6.0 and 2.6.3, '!=2.6.*' the rest
            if clause.group(1) not in ("==", "!="):
                return None
            prefix = _release(clause.group(2))
            if (_padded(release, prefix)[0][: len(prefix)] == prefix) != (clause.group(1) == "=="):
                return False
            continue
        ours, theirs = _padded(release, _release(clause.group(2)))
        if not _OPS[clause.group(1)](ours, theirs):
            return False
    return True


def contains(spec: str, torch_version: str) -> bool:
    """Whether the release of ``torch_version`` is in the PEP 440 ``spec`` (see :func:`applies`); False when the
    version cannot be parsed."""
    return applies(spec, torch_version)[0] is True


@functools.lru_cache(maxsize=512)
def applies(spec: str | None, torch_version: str | None) -> tuple[bool | None, str | None]:
    """(applies, note) for a section's ``torch`` specifier and a torch version such as '2.4.1+cu121'.

    ``applies`` is None when either is unknown (no specifier, torch absent or unparsable); ``note`` says
    e.g. "needs torch >=2.6; yours is 2.4.1" when the version is outside the range, else None.  Local
    version labels (+cpu, +cu121) and pre-releases count as their release (2.6.0a0 satisfies >=2.6).
    A pure function of its two strings, memoised (every answer asks it for each of its sections).
    """
    if not spec or not torch_version:
        return None, None
    inside = _plain_contains(spec, torch_version)
    if inside is None:
        from packaging.specifiers import SpecifierSet
        from packaging.version import InvalidVersion, Version

        try:
            release = Version(Version(torch_version).base_version)
        except InvalidVersion:
            return None, None
        inside = SpecifierSet(spec).contains(release, prereleases=True)
    if inside:
        return True, None
    return False, f"needs torch {spec}; yours is {torch_version}"
