"""The parsed-knowledge cache check reads fence settings and the card outline quickly; these hold the quick
readings equal to the slow ones (shlex, a line-by-line scan) on every text of a seeded grid of odd pieces."""

from __future__ import annotations

import random
import shlex

from fsdp_skill.core.knowledge import cache_check


def _shlex(text: str) -> list[str] | str:
    try:
        return shlex.split(text)
    except ValueError:
        return "ValueError"


def _quick(text: str) -> list[str] | str:
    try:
        return cache_check._words(text)
    except ValueError:
        return "ValueError"


def _texts(pieces: list[str], count: int, longest: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [pieces[0] * 0] + ["".join(rng.choice(pieces) for _ in range(rng.randint(1, longest))) for _ in range(count)]


_FENCE_PIECES = ["a", "=", '"', "'", " ", "\t", "x", "1", ".", "\n", "\\", "\u00a0", 'expects="E: m n"', "tol=1e-6"]


def test_fence_settings_are_read_as_shlex_reads_them():
    texts = _texts(_FENCE_PIECES, 3000, 9, 1) + ['checks=raises expects="RuntimeError: a b"', "a='x y'z", 'a="x']
    differ = [(t, _quick(t), _shlex(t)) for t in texts if _quick(t) != _shlex(t)]
    assert not differ, differ[:5]


def _outline_by_lines(lines: list[str]) -> tuple[int, int]:
    """The outline scan over every line (the reference the one-scan reading must equal)."""
    headings = fences = 0
    fence = None
    for line in lines:
        match = cache_check._FENCE.match(line)
        stripped = line.strip()
        if fence is None and match:
            fence = match.group(1)
            fences += bool(cache_check._VERIFY_FENCE.match(line))
        elif fence is not None and match and stripped == fence[0] * len(stripped) and len(stripped) >= len(fence):
            fence = None
        elif fence is None and line.startswith("## "):
            headings += 1
    return headings, fences


_CARD_PIECES = ["## a", "```python verify", "```", "~~~~", "  ```", " ", "\n", "\r", "\r\n", "\x0c", "x", "\u2028", "\u00a0```"]


def test_the_card_outline_is_counted_as_a_line_by_line_scan_counts_it():
    texts = _texts(_CARD_PIECES, 3000, 12, 3)
    differ = [
        t for t in texts if cache_check._outline(t, t.splitlines(keepends=True)) != _outline_by_lines(t.splitlines(keepends=True))
    ]
    assert not differ, differ[:5]
