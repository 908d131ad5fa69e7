"""Checking a parsed-knowledge cache file against the cards it claims to come from, without parsing them.

The cache (``$FSDP_SKILL_HOME/knowledge-<digest>.json``) is named by the cards' digest, but its content
is whatever the file holds: anything that can write the state directory could plant sections that are
not in the cards.  :func:`cards_agree` accepts a cached list of cards only when every card, section and
snippet is where the card files put it: one card per file in file order, each section heading on its
line and every line of its prose in the card, each snippet's code byte-for-byte right after its fence
line, the fence's settings equal to the snippet's fields, and as many sections and verify fences per
card as the file has.  It reads the card bytes already loaded for the digest and takes a few
milliseconds (a parse takes hundreds).
"""

from __future__ import annotations

import re
from pathlib import Path

from fsdp_skill.core.models import Card, SectionDoc, SnippetSpec

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_VERIFY_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})[ \t]*\S+[ \t]+verify\b")
# A line that can change the outline: a fence line (what _FENCE matches) or a '## ' heading
_OUTLINE_LINE = re.compile(r"## |\s*(?:```|~~~)")
# What makes shlex.split differ from str.split: quotes, a backslash, or whitespace other than shlex's own
_SHLEX_SPECIAL = re.compile(r"[\"'\\]|[^\S \t\r\n]")


def cards_agree(cards: list[Card], sources: list[tuple[Path, bytes]]) -> bool:
    """Whether ``cards`` (from a cache file) are what parsing ``sources`` (card path, bytes) would give,
    as far as the checks in the module docstring go; False for any mismatch or undecodable card."""
    if [c.file for c in cards] != [p.name for p, _ in sources]:
        return False
    for card, (path, data) in zip(cards, sources, strict=True):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        if not _card_agrees(card, path, text.splitlines(keepends=True)):
            return False
    return True


def _card_agrees(card: Card, path: Path, lines: list[str]) -> bool:
    if not (card.id == card.topic == path.stem) or not card.sections:
        return False
    headings, fences = _outline(lines)
    if headings != len(card.sections) or fences != sum(len(s.snippets) for s in card.sections):
        return False
    stripped = set(map(str.strip, lines))
    ids = set()
    for section in card.sections:
        if section.id in ids or not _section_agrees(section, card, lines, stripped):
            return False
        ids.add(section.id)
    return True


def _outline(lines: list[str]) -> tuple[int, int]:
    """(number of '## ' headings outside fences, number of verify fences) of a card's lines."""
    headings = fences = 0
    fence: str | None = None
    for line in filter(_OUTLINE_LINE.match, lines):  # the other lines change nothing: skip them in C
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            fences += bool(_VERIFY_FENCE.match(line))
        elif fence is not None and match and line.strip() == fence[0] * len(line.strip()) and len(line.strip()) >= len(fence):
            fence = None
        elif fence is None and line.startswith("## "):
            headings += 1
    return headings, fences


def _section_agrees(section: SectionDoc, card: Card, lines: list[str], stripped: set[str]) -> bool:
    if section.card != card.file or section.topic != card.topic or not section.id.startswith(card.topic + "/"):
        return False
    if not 1 <= section.line <= len(lines) or not lines[section.line - 1].startswith("## "):
        return False
    if lines[section.line - 1][3:].strip() != section.title:
        return False
    if not stripped.issuperset(map(str.strip, section.text.splitlines())):
        return False
    for index, snip in enumerate(section.snippets):
        if snip.section_id != section.id or not _snippet_agrees(snip, section, index, lines):
            return False
    return True


def _snippet_agrees(snip: SnippetSpec, section: SectionDoc, index: int, lines: list[str]) -> bool:
    """The snippet's code follows its fence line byte for byte, and the fence's settings are its fields."""
    n = snip.code.count("\n")
    if not 1 <= snip.line or snip.line + n > len(lines) or not snip.code.endswith("\n"):
        return False
    if "".join(lines[snip.line : snip.line + n]) != snip.code:
        return False
    fence = lines[snip.line - 1].strip().lstrip("`~").split(None, 2)
    if len(fence) < 2 or fence[:2] != ["python", "verify"]:
        return False
    try:
        settings = dict(w.split("=", 1) for w in _words(fence[2] if len(fence) > 2 else ""))
        tolerance = float(settings["tol"]) if "tol" in settings else None
        want = (
            int(settings.get("world_size", 2)),
            settings.get("backend", "auto"),
            float(settings.get("timeout", 60)),
            [r for r in settings.get("requires", "").split(",") if r],
            settings.get("checks"),
            tolerance,
            settings.get("expects", "").strip() or None,
        )
    except ValueError:
        return False
    name = settings.get("name")
    snippet_id = f"{section.topic}/{name}" if name else section.id + (f"-{index + 1}" if index else "")
    return (snip.id, snip.world_size, snip.backend, snip.timeout, snip.requires, snip.checks, snip.tolerance, snip.expects) == (
        snippet_id,
        *want,
    )


def _words(text: str) -> list[str]:
    """``shlex.split(text)``; plain ``str.split`` when that gives the same words (no quotes, backslashes or
    unusual whitespace: the common fence line), which takes a fraction of shlex's time."""
    if _SHLEX_SPECIAL.search(text):
        import shlex

        return shlex.split(text)
    return text.split()
