"""Chinese bodies of the knowledge sections: parsing ``knowledge/zh/*.md``, rendering, consistency.

Every section of an English card ``knowledge/<card>.md`` has a full Chinese body in
``knowledge/zh/<card>.md``, written from the same facts. The format (README, "Chinese bodies")::

    ## <Chinese title>
    <!-- id: fsdp2/fsdp1-vs-fsdp2 -->

    中文正文，API 名称与代码标识符保持原样（`fully_shard`）……

    {{code}}

A line holding only ``{{code}}`` stands for the next fenced code block of the English section, in
order, so the code a reader sees in Chinese is byte for byte the code that was verified. The file
``knowledge/zh/glossary.md`` holds the standard Chinese terms of the field (a markdown table with a
regular-expression column) that :func:`problems` checks are used.

Nothing here imports torch; parsing all files takes milliseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fsdp_skill.errors import KnowledgeError

CODE_MARK = "{{code}}"
GLOSSARY_FILE = "glossary.md"
_ID_COMMENT = re.compile(r"^<!--\s*id:\s*(\S+)\s*-->\s*$")
# digits not glued to a Latin word (the 2 of FSDP2 is a name, not a number); a CJK character next to them is fine
_NUMBER = re.compile(r"(?<![A-Za-z0-9_./-])\d+(?:\.\d+)*(?![A-Za-z0-9_])|(?<=-)\d+(?:\.\d+)*(?![A-Za-z0-9_])")
_URL = re.compile(r"https?://\S+")


@dataclass(frozen=True)
class ZhSection:
    """The Chinese body of one section: its title, its template (prose with ``{{code}}`` lines), where."""

    id: str
    title: str
    template: str
    path: str
    line: int  # 1-based line of the ``## `` heading


@dataclass(frozen=True)
class Term:
    """One glossary row: the English term, its Chinese rendering, the pattern finding it in English prose, and
    the pattern of forms a Chinese body must not use for it (None: no such form)."""

    english: str
    chinese: str
    pattern: re.Pattern[str]
    avoid: re.Pattern[str] | None = None


def parse_zh(source: str, path: str | Path = "<zh>") -> list[ZhSection]:
    """The sections of one Chinese file, in file order.

    Raises:
        KnowledgeError: a ``## `` heading without an ``<!-- id: ... -->`` line right after it, an id
            given twice, a fenced code block (code is written as ``{{code}}``), or text before the
            first heading other than a ``# `` title.
    """
    lines = source.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("## ")]
    for i, line in enumerate(lines[: heads[0] if heads else len(lines)]):
        if line.strip() and not line.startswith("# ") and not line.startswith("<!--"):
            raise KnowledgeError(str(path), i + 1, "text before the first '## ' section heading")
    out: list[ZhSection] = []
    seen: set[str] = set()
    for n, start in enumerate(heads):
        end = heads[n + 1] if n + 1 < len(heads) else len(lines)
        nxt = next((j for j in range(start + 1, end) if lines[j].strip()), None)
        m = _ID_COMMENT.match(lines[nxt].strip()) if nxt is not None else None
        if nxt is None or not m:  # m is None exactly when nxt is
            raise KnowledgeError(
                str(path), start + 1, "a Chinese section needs '<!-- id: card/slug -->' on the line after its heading"
            )
        if m.group(1) in seen:
            raise KnowledgeError(str(path), start + 1, f"section id {m.group(1)!r} given twice")
        seen.add(m.group(1))
        body = lines[nxt + 1 : end]
        fenced = _fence_lines(body)
        if fenced:
            raise KnowledgeError(
                str(path),
                nxt + 2 + fenced[0],
                f"write code as a '{CODE_MARK}' line, not a fence (the English section's verified code is put there)",
            )
        out.append(
            ZhSection(
                id=m.group(1),
                title=lines[start][3:].strip(),
                template="\n".join(body).strip() + "\n",
                path=str(path),
                line=start + 1,
            )
        )
    return out


def load_zh(directory: str | Path) -> dict[str, ZhSection]:
    """All Chinese sections under ``directory/zh`` by section id (empty when the folder is missing).

    Raises:
        KnowledgeError: a malformed file (see :func:`parse_zh`) or an id present in two files.
    """
    folder = Path(directory) / "zh"
    out: dict[str, ZhSection] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.md")):
        if path.name == GLOSSARY_FILE:
            continue
        for sec in parse_zh(path.read_text(encoding="utf-8"), path):
            if sec.id in out:
                raise KnowledgeError(str(path), sec.line, f"section id {sec.id!r} also in {out[sec.id].path}")
            out[sec.id] = sec
    return out


def load_glossary(directory: str | Path) -> list[Term]:
    """The rows of ``directory/zh/glossary.md`` (columns English | 中文 | pattern | avoid, a ``|`` inside a
    cell written ``\\|``); empty when the file is missing.

    Raises:
        KnowledgeError: a row without the four cells, or whose patterns are not valid regular expressions.
    """
    path = Path(directory) / "zh" / GLOSSARY_FILE
    if not path.is_file():
        return []
    terms = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("|"):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if cells[0] in ("English", "") or set(cells[0]) <= {"-"}:
            continue
        if len(cells) != 4:
            raise KnowledgeError(str(path), n, f"a glossary row has 4 cells (English | 中文 | pattern | avoid), not {len(cells)}")
        try:
            terms.append(
                Term(cells[0], cells[1], re.compile(cells[2], re.IGNORECASE), re.compile(cells[3]) if cells[3] else None)
            )
        except re.error as exc:
            raise KnowledgeError(str(path), n, f"bad pattern in {line.strip()!r}: {exc}") from None
    return terms


_OPEN = re.compile(r"^(\s*)(`{3,}|~{3,})")
_FENCE_MARK = re.compile("```|~~~")


def _fence_lines(lines: list[str]) -> list[int]:
    """Indexes of the lines that start, after whitespace, with a fence (three backticks or tildes)."""
    if not _FENCE_MARK.search("\n".join(lines)):  # most bodies: one scan in C
        return []
    return [j for j, line in enumerate(lines) if line.lstrip().startswith(("```", "~~~"))]


def fences(text: str) -> list[str]:
    """The fenced code blocks of a markdown text, each exactly as written (fence lines included).

    A line scanner, not a markdown parse, so that loading the Chinese bodies costs no markdown-it import on
    the cached path; ``tests/test_zh.py`` checks it finds what markdown-it finds in every section.
    """
    if "```" not in text and "~~~" not in text:  # no fence line can open
        return []
    lines = text.splitlines(keepends=True)
    out, i = [], 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m or m.group(2)[0] == "`" and "`" in lines[i][m.end() :]:
            i += 1
            continue
        fence, j = m.group(2), i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence) and set(lines[j].strip()) == {fence[0]}):
            j += 1
        out.append("".join(lines[i : j + 1]).rstrip("\n"))
        i = j + 1
    return out


def render(english: str, template: str) -> str:
    """The Chinese body as markdown: each ``{{code}}`` line replaced by the English text's next fence.

    Raises:
        ValueError: the template has a different number of ``{{code}}`` lines than the English text
            has fenced blocks.
    """
    blocks = fences(english)
    parts = template.split("\n")
    marks = [i for i, line in enumerate(parts) if line.strip() == CODE_MARK]
    if len(marks) != len(blocks):
        raise ValueError(f"the Chinese body has {len(marks)} {CODE_MARK} lines, the English one {len(blocks)} code blocks")
    for i, block in zip(marks, blocks, strict=True):
        parts[i] = block
    return "\n".join(parts)


def _prose(text: str) -> tuple[set[str], str]:
    """The inline code spans of a markdown text and its prose (text outside code, links' URLs dropped)."""
    from markdown_it import MarkdownIt

    spans: set[str] = set()
    prose: list[str] = []
    for tok in MarkdownIt("commonmark").parse(text):
        if tok.type != "inline":
            continue
        for child in tok.children or []:
            if child.type == "code_inline":
                spans.add(child.content)
            elif child.type == "text":
                prose.append(child.content)
    return spans, _URL.sub(" ", " ".join(prose))


def numbers(prose: str) -> set[str]:
    """The numbers written in digits in a prose text (``2.13``, ``600``, the ``0`` of ``dim-0``)."""
    return {m.group() for m in _NUMBER.finditer(prose)}


def problems(english: str, zh: ZhSection, glossary: list[Term]) -> list[str]:
    """What makes a Chinese body drift from its English section; empty when they agree.

    Checks: the same number of code blocks; every inline code span of the English text appears as an
    inline code span in the Chinese one; every number written in digits in the English prose appears
    in the Chinese prose (or its code spans); every glossary term the English prose uses appears in
    its Chinese form; the body is mostly Chinese.
    """
    out: list[str] = []
    try:
        render(english, zh.template)
    except ValueError as exc:
        out.append(str(exc))
    en_spans, en_prose = _prose(english)
    zh_spans, zh_prose = _prose(zh.template)
    missing = sorted(en_spans - zh_spans)
    if missing:
        out.append("code spans missing: " + ", ".join(f"`{s}`" for s in missing))
    lost = sorted(numbers(en_prose) - numbers(zh_prose) - numbers(" ".join(zh_spans)) - _digits_in(zh_spans))
    if lost:
        out.append("numbers missing: " + ", ".join(lost))
    for term in glossary:
        if term.pattern.search(en_prose) and term.chinese not in zh.template:
            out.append(f"glossary term {term.english!r} should be written {term.chinese!r}")
        bad = term.avoid.search(zh_prose) if term.avoid else None
        if bad:
            out.append(f"glossary term {term.english!r}: write {term.chinese!r}, not {bad.group()!r}")
    cjk = len(re.findall(r"[\u4e00-\u9fff]", zh_prose))
    if cjk < 0.25 * len(re.sub(r"\s", "", zh_prose)):
        out.append(f"the body is not mostly Chinese ({cjk} CJK characters)")
    return out


def _digits_in(spans: set[str]) -> set[str]:
    return {d for s in spans for d in re.findall(r"\d+(?:\.\d+)*", s)}
