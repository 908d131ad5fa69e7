"""The Python code pasted in a question (``ask`` checks it with :mod:`fsdp_skill.core.check`).

:func:`code_blocks` finds it: every fenced block that parses, or, with no fence, the whole text when it reads
as a pasted script.  Parsed with :mod:`ast`, never run.
"""

from __future__ import annotations

import re

from fsdp_skill.core.parsing import parse_module

__all__ = ["code_blocks"]

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
_CODE_LINE = re.compile(
    r"^\s*(import \w|from [\w.]+ import |def \w+\(|class \w+[(:]|for .+ in .+:\s*$|"
    r"if .+:\s*$|with .+:\s*$|\w[\w.\[\]]* = .+|[\w.]+\(.*\)\s*$|return\b)"
)
_CODE_LANGS = {"", "python", "py", "python3", "py3", "ipython"}


def code_blocks(text: str) -> list[str]:
    """The Python code in a question: every fenced block (```python, ```py or unlabelled) that parses,
    else, with no fence, the text itself when at least three of its lines are code and it parses whole
    (a pasted script).  Prose, tracebacks and logs give no blocks."""
    blocks = []
    for m in _FENCE.finditer(text):
        if m.group(2).lower() in _CODE_LANGS and _parses(m.group(3)):
            blocks.append(m.group(3))
    if blocks or _FENCE.search(text):
        return blocks
    lines = [ln for ln in text.splitlines() if ln.strip()]
    code_lines = sum(bool(_CODE_LINE.match(ln)) for ln in lines)
    if code_lines >= 3 and code_lines * 2 >= len(lines) and _parses(text):
        return [text]
    return []


def _parses(code: str) -> bool:
    try:
        parse_module(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):  # a block Python cannot parse is not code
        return False
    return bool(code.strip())
