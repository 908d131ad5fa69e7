"""The Chinese bodies: every section has one, each says what its English section says (the same code blocks,
inline code, numbers, glossary terms), a drifted translation is caught, the loader refuses a broken one, and
Chinese questions find their sections at least as well as English ones on every question set."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.core.knowledge.zh import CODE_MARK, ZhSection, fences, load_glossary, load_zh, numbers, parse_zh, problems, render
from fsdp_skill.errors import KnowledgeError

KB = load_knowledge()
ZH = load_zh(KB.directory)
GLOSSARY = load_glossary(KB.directory)
DATA = Path(__file__).parent / "data"


def test_every_section_has_a_chinese_body_and_title():
    missing = [sid for sid, s in KB.sections.items() if not (s.text_zh and s.title_zh)]
    assert missing == [] and set(ZH) == set(KB.sections)


@pytest.mark.parametrize("sid", sorted(KB.sections))
def test_chinese_body_agrees_with_the_english(sid):
    """Same code blocks, the English inline code spans, its numbers and its glossary terms; mostly Chinese."""
    assert problems(KB.sections[sid].text, ZH[sid], GLOSSARY) == []


def test_code_blocks_of_the_chinese_bodies_are_the_verified_english_ones_byte_for_byte():
    checked = 0
    for s in KB.sections.values():
        assert fences(s.text_zh) == fences(s.text), s.id
        checked += len(fences(s.text))
    assert checked > 0


def test_the_fence_scanner_finds_what_markdown_it_finds():
    for s in KB.sections.values():
        for text in (s.text, s.text_zh):
            lines = text.splitlines(keepends=True)
            want = [
                "".join(lines[t.map[0] : t.map[1]]).rstrip("\n")
                for t in MarkdownIt("commonmark").parse(text)
                if t.type == "fence"
            ]
            assert fences(text) == want, s.id


def test_glossary_terms_are_used_where_the_english_uses_them():
    """Each glossary row is exercised by at least one section (a row nobody needs would test nothing)."""
    used = {t.english for t in GLOSSARY for s in KB.sections.values() if t.pattern.search(s.text)}
    assert len(GLOSSARY) >= 30 and used == {t.english for t in GLOSSARY}
    assert {"分片", "全收集", "归约散射", "进程组", "混合精度", "梯度累积"} <= {t.chinese for t in GLOSSARY}


# --- a drifted translation is caught ------------------------------------------------------------------------
ENGLISH = """With `reshard_after_forward=True` (the default) each rank keeps 1/4 of the parameters after forward,
so the all-gather runs again in backward; torch 2.13 waits 600 seconds.

```bash
torchrun --nproc_per_node=4 train.py
```
"""
GOOD = """默认 `reshard_after_forward=True` 时，前向之后每个 rank 只保留 1/4 的参数，所以反向时还要再做一次全收集
（all-gather）；torch 2.13 会等待 600 秒。

{{code}}
"""


def _zh(template: str) -> ZhSection:
    return ZhSection(id="x/y", title="标题", template=template, path="zh/x.md", line=1)


def test_a_faithful_body_has_no_problem_and_renders_the_english_code():
    assert problems(ENGLISH, _zh(GOOD), GLOSSARY) == []
    assert fences(render(ENGLISH, GOOD)) == fences(ENGLISH)


@pytest.mark.parametrize(
    "drift, expected",
    [
        (GOOD.replace("600", "60"), "numbers missing: 600"),
        (GOOD.replace("2.13", "2.12"), "numbers missing: 2.13"),
        (GOOD.replace("1/4", "四分之一"), "numbers missing: 1"),
        (
            GOOD.replace("`reshard_after_forward=True`", "reshard_after_forward 为真"),
            "code spans missing: `reshard_after_forward=True`",
        ),
        (GOOD.replace("{{code}}\n", ""), "the Chinese body has 0 {{code}} lines, the English one 1 code blocks"),
        (GOOD.replace("全收集\n（all-gather）", "all-gather"), "glossary term 'all-gather' should be written '全收集'"),
        (GOOD.replace("参数", "参数（封装后）"), "glossary term 'wrap / wrapper': write '包装', not '封装'"),
        (
            "With reshard_after_forward=True each rank keeps 1/4 ... 2.13 600 `reshard_after_forward=True` 分片 全收集 前向 参数\n"
            "{{code}}\n",
            "the body is not mostly Chinese",
        ),
    ],
    ids=["number", "version", "fraction", "code span", "code block", "glossary term", "avoided form", "english"],
)
def test_a_drifted_translation_is_caught(drift, expected):
    found = problems(ENGLISH, _zh(drift), GLOSSARY)
    assert any(p.startswith(expected) for p in found), found


def test_numbers_are_digits_outside_names():
    assert numbers("FSDP2 在 torch 2.13 中把 dim-0 切成 4份，bf16 与 1e-6") == {"2.13", "0", "4", "6"}


# --- the loader refuses a broken Chinese file ---------------------------------------------------------------
@pytest.mark.parametrize(
    "source, message",
    [
        ("## 标题\n正文\n", "needs '<!-- id: card/slug -->'"),
        ("## 标题\n<!-- id: a/b -->\n```python\nx = 1\n```\n", f"write code as a '{CODE_MARK}' line"),
        ("## 甲\n<!-- id: a/b -->\n正文\n## 乙\n<!-- id: a/b -->\n正文\n", "given twice"),
        ("随便写的一段\n## 标题\n<!-- id: a/b -->\n", "text before the first"),
    ],
    ids=["no id", "fence", "duplicate", "stray text"],
)
def test_malformed_chinese_files_are_rejected_with_file_and_line(source, message):
    with pytest.raises(KnowledgeError, match=re.escape(message)) as exc:
        parse_zh(source, "zh/x.md")
    assert str(exc.value).startswith("zh/x.md:")


def _copy_knowledge(tmp_path: Path) -> Path:
    dest = tmp_path / "knowledge"
    shutil.copytree(KB.directory, dest, ignore=shutil.ignore_patterns("__pycache__", "mutations"))
    return dest


def test_loader_refuses_an_unknown_id_or_a_code_block_mismatch(tmp_path):
    dest = _copy_knowledge(tmp_path)
    card = dest / "zh" / "join.md"
    original = card.read_text(encoding="utf-8")
    card.write_text(original + "\n## 多出来的一节\n<!-- id: join/no-such-section -->\n\n正文。\n", encoding="utf-8")
    with pytest.raises(KnowledgeError, match="join/no-such-section.*has no English section"):
        load_knowledge(dest)
    sid = next(s.id for s in KB.sections.values() if fences(s.text))
    zh_card = dest / "zh" / Path(ZH[sid].path).name
    card.write_text(original, encoding="utf-8")
    zh_card.write_text(zh_card.read_text(encoding="utf-8").replace(CODE_MARK, "（代码略）", 1), encoding="utf-8")
    with pytest.raises(KnowledgeError, match="code blocks"):
        load_knowledge(dest)


def test_a_section_without_a_chinese_body_falls_back_to_english(tmp_path):
    dest = _copy_knowledge(tmp_path)
    (dest / "zh" / "join.md").unlink()
    kb = load_knowledge(dest)
    assert all(s.text_zh is None for s in kb.sections.values() if s.topic == "join")
    assert all(s.text_zh for s in kb.sections.values() if s.topic != "join")


# --- Chinese questions find their sections at least as well as English ones --------------------------------
QUESTION_SETS = sorted(DATA.glob("*questions*.jsonl")) + sorted(DATA.glob("public_*.jsonl"))


def _hit(answer, q: dict, k: int = 3) -> bool:
    """The rule of ../shared/eval/score.py: a top-k section's title, text and snippet code (first 4,000
    characters, lower-cased) hold every term of "all" and one of "any"."""
    for s in answer.sections[:k]:
        text = "\n".join([s.title, s.text] + [sn.code for sn in s.snippets]).lower()[:4000]
        if all(t.lower() in text for t in q.get("all", [])) and (not q.get("any") or any(t.lower() in text for t in q["any"])):
            return True
    return False


@pytest.mark.parametrize("path", QUESTION_SETS, ids=lambda p: p.stem)
def test_chinese_hit_at_3_is_at_least_the_english_one(path):
    from fsdp_skill.core.answer import ask

    rate = {}
    for lang in ("en", "zh"):
        qs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        qs = [q for q in qs if q.get("lang") == lang and not q.get("abstain")]
        assert qs, (path, lang)
        rate[lang] = sum(_hit(ask(q["question"], k=3, verify=False, with_api=False), q) for q in qs) / len(qs)
    assert rate["zh"] >= rate["en"], rate
