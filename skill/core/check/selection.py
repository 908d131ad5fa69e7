"""``select`` / ``ignore``: which rule codes a run keeps, by code prefix (``FSD0`` selects all, ``FSD01``
FSD010-FSD019)."""

from __future__ import annotations

from collections.abc import Iterable

from fsdp_skill.core.check.rules import NOT_ANALYSED, RULES
from fsdp_skill.errors import InvalidArgument


def validate_codes(prefixes: Iterable[str] | None) -> list[str]:
    """Upper-cased code prefixes; raises InvalidArgument for one that matches no rule (e.g. 'E501')."""
    out = []
    known = [*RULES, NOT_ANALYSED]
    for p in prefixes or []:
        for part in (x.strip().upper() for x in p.split(",")):
            if not part:
                continue
            if not any(code.startswith(part) for code in known):
                raise InvalidArgument(
                    f"unknown rule code {part!r}: codes are {NOT_ANALYSED}-{max(RULES)} (see README's rule table)"
                )
            out.append(part)
    return out


def keep(code: str, select: list[str], ignore: list[str]) -> bool:
    """Is ``code`` selected (no ``select``, or a prefix of it matches) and not ignored (no ``ignore`` prefix matches)?"""
    return (not select or any(code.startswith(s) for s in select)) and not any(code.startswith(i) for i in ignore)
