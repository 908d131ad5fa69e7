"""The parsed-knowledge cache file: what it holds, and checking it against the cards it claims to come from.

The cache (``$FSDP_SKILL_HOME/knowledge-<digest>.json``) is named by the cards' digest, but its content is
whatever the file holds: anything that can write the state directory could plant sections that are not in the
cards.  So it holds no prose and no code: each section names the ``[start, end)`` line ranges of its card its
prose is made of (``text_lines``) and each snippet how many lines follow its fence line (``code_lines``);
:func:`cards_from_cache` takes both from the card bytes already read for the digest.  It accepts the cached
cards only when every card, section and snippet is where the card files put it: one card per file in file
order, each section heading on its line, its prose ranges inside the section in order, each snippet's code
ending at a closing fence (or the end of the file), the fence's settings equal to the snippet's fields, and as
many sections and verify fences per card as the file has.  It takes a few milliseconds (a parse takes hundreds).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from fsdp_skill.core.models import Card, SectionDoc, SnippetSpec

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_VERIFY_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})[ \t]*\S+[ \t]+verify\b")
# A line that can change the outline: a fence line (what _FENCE matches) or a '## ' heading
_OUTLINE_LINE = re.compile(r"## |\s*(?:```|~~~)")
# The same lines found in a whole text whose only line end is \n (\s* of a line, without crossing one)
# (searched in "\n" + text: a pattern opening with a literal is scanned for in C, a '^' one tried at every character)
_OUTLINE_LINES = re.compile(r"\n((?:## |[^\S\n]*(?:```|~~~))[^\n]*)")
# One word of a fence line as shlex.split reads it when there is no backslash: unquoted runs and quoted parts
_WORD = re.compile(r"""(?:[^\s"']+|"[^"]*"|'[^']*')+""")
_QUOTED = re.compile(r""""([^"]*)"|'([^']*)'""")
# What the quick reading of a fence line does not cover: a backslash, or whitespace other than shlex's own
_SHLEX_SPECIAL = re.compile(r"[\\]|[^\S \t\r\n]")


def prose_of(lines: list[str], ranges: Sequence[tuple[int, int]] | Sequence[list[int]]) -> str:
    """A section's ``text``: its card's ``lines`` (with their line ends) in the ``[start, end)`` ``ranges``, runs of
    three or more newlines made two, stripped."""
    text = "".join(["".join(lines[a:b]) for a, b in ranges])
    if "\n\n\n" in text:
        text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def cache_form(cards: list[Card], sources: list[tuple[Path, bytes]], spans: dict[str, list[tuple[int, int]]]) -> list[Any] | None:
    """The cache file's content for ``cards`` parsed from ``sources`` (card path, bytes), ``spans`` the prose line
    ranges :func:`fsdp_skill.core.knowledge.cards.parse_card` gave per section id: each card's ``model_dump()``
    with ``text_lines`` for a section's text and ``code_lines`` for a snippet's code.  None when that form would
    not give the same cards back (a section without ranges, code that is not the lines after its fence: an
    indented fence), so such cards are parsed each time rather than cached wrongly."""
    out = []
    for card, (_, data) in zip(cards, sources, strict=True):
        lines = data.decode("utf-8").splitlines(keepends=True)
        dump = card.model_dump()
        for section, sd in zip(card.sections, dump["sections"], strict=True):
            ranges = spans.get(section.id)
            if ranges is None or prose_of(lines, ranges) != section.text:
                return None
            del sd["text"]
            sd["text_lines"] = [list(r) for r in ranges]
            sd["title_zh"] = sd["text_zh"] = None  # the Chinese bodies are read from their files (cards._attach_zh)
            for snip, nd in zip(section.snippets, sd["snippets"], strict=True):
                n = snip.code.count("\n")
                if "".join(lines[snip.line : snip.line + n]) != snip.code:
                    return None
                del nd["code"]
                nd["code_lines"] = n
        out.append(dump)
    return out


def cards_from_cache(data: list[Any], sources: list[tuple[Path, bytes]]) -> list[Card] | None:
    """The cards a cache file's ``data`` (:func:`cache_form`) stands for, their prose and code taken from
    ``sources`` (card path, bytes); None when the file does not have that form or does not agree with the cards
    (see the module docstring).  Raises ValueError for a field of the wrong type (the caller parses again)."""
    if len(data) != len(sources):
        return None
    cards = []
    for cd, (path, raw) in zip(data, sources, strict=True):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        lines = text.splitlines(keepends=True)
        if not isinstance(cd, dict) or cd.get("file") != path.name or not _fill(cd, lines):
            return None
        card = Card.from_data(cd)
        if not _card_agrees(card, path, text, lines):
            return None
        cards.append(card)
    return cards


def _fill(card: dict[str, Any], lines: list[str]) -> bool:
    """Put each section's ``text`` and each snippet's ``code`` into a cached card dict from the card's ``lines``;
    False when a range or count is malformed or lies outside its section."""
    sections = card.get("sections")
    if not isinstance(sections, list):
        return False
    if not all(isinstance(sd, dict) and type(sd.get("line")) is int for sd in sections):
        return False
    heads: list[int] = [sd["line"] for sd in sections]
    for n, sd in enumerate(sections):
        first, end = heads[n], heads[n + 1] - 1 if n + 1 < len(heads) else len(lines)  # after the heading, before the next
        ranges, snippets = sd.pop("text_lines", None), sd.get("snippets")
        if not isinstance(ranges, list) or not isinstance(snippets, list) or not _in_order(ranges, first, end):
            return False
        sd["text"] = prose_of(lines, ranges)
        for nd in snippets:
            count = nd.pop("code_lines", None) if isinstance(nd, dict) else None
            line = nd.get("line") if isinstance(nd, dict) else None
            if type(count) is not int or type(line) is not int or not (first < line and 0 <= count and line + count <= end):
                return False
            if not _closes(lines, line - 1, line + count):
                return False
            nd["code"] = "".join(lines[line : line + count])
    return True


def _in_order(ranges: list[Any], first: int, end: int) -> bool:
    """Whether ``ranges`` are ``[start, end)`` pairs of ints, in order, not overlapping, within ``[first, end)``."""
    at = first
    for r in ranges:
        if not (isinstance(r, list) and len(r) == 2 and type(r[0]) is int and type(r[1]) is int and at <= r[0] <= r[1] <= end):
            return False
        at = r[1]
    return True


def _closes(lines: list[str], opening: int, closing: int) -> bool:
    """Whether line ``closing`` closes the fence opened at line ``opening`` (0-based), or is the end of the file."""
    if closing == len(lines):
        return True
    fence = _FENCE.match(lines[opening])
    return fence is not None and _closes_fence(fence.group(1), lines[closing])


def _closes_fence(fence: str, line: str) -> bool:
    """Whether ``line`` closes a fence opened with ``fence`` (the same character, at least as many, nothing else)."""
    mark = line.strip()
    return len(mark) >= len(fence) and mark == fence[0] * len(mark)


def _card_agrees(card: Card, path: Path, text: str, lines: list[str]) -> bool:
    if not (card.id == card.topic == path.stem) or not card.sections:
        return False
    headings, fences = _outline(text, lines)
    if headings != len(card.sections) or fences != sum(len(s.snippets) for s in card.sections):
        return False
    ids = set()
    for section in card.sections:
        if section.id in ids or not _section_agrees(section, card, lines):
            return False
        ids.add(section.id)
    return True


def _outline(text: str, lines: list[str]) -> tuple[int, int]:
    """(number of '## ' headings outside fences, number of verify fences) of a card's text (and its lines)."""
    headings = fences = 0
    fence: str | None = None
    if len(lines) != text.count("\n") + (bool(text) and not text.endswith("\n")):  # another line end (a lone \r, \f, ...)
        candidates: Iterable[str] = filter(_OUTLINE_LINE.match, lines)  # test each line splitlines gave
    else:  # the lines that can change the outline, found in one scan of the text
        candidates = _OUTLINE_LINES.findall("\n" + text)
    for line in candidates:
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            fences += bool(_VERIFY_FENCE.match(line))
        elif fence is not None and match and _closes_fence(fence, line):
            fence = None
        elif fence is None and line.startswith("## "):
            headings += 1
    return headings, fences


def _section_agrees(section: SectionDoc, card: Card, lines: list[str]) -> bool:
    if section.card != card.file or section.topic != card.topic or not section.id.startswith(card.topic + "/"):
        return False
    if not 1 <= section.line <= len(lines) or not lines[section.line - 1].startswith("## "):
        return False
    if lines[section.line - 1][3:].strip() != section.title:
        return False
    for index, snip in enumerate(section.snippets):
        if snip.section_id != section.id or not _snippet_agrees(snip, section, index, lines):
            return False
    return True


def _snippet_agrees(snip: SnippetSpec, section: SectionDoc, index: int, lines: list[str]) -> bool:
    """The fence's settings are the snippet's fields (its code is the card's lines after the fence: :func:`_fill`)."""
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
    """``shlex.split(text)`` (the fence's settings), read without shlex when the text has no backslash and no
    whitespace other than shlex's own (the words, their quotes removed, are then exactly shlex's); shlex for
    anything else, a quote left open included (shlex's ValueError)."""
    if not _SHLEX_SPECIAL.search(text):
        words = _WORD.findall(text)
        if not _WORD.sub("", text).strip(" \t\r\n"):  # every other character is in a word: no quote left open
            return [_QUOTED.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), w) for w in words]
    import shlex

    return shlex.split(text)
