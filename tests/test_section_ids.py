"""Every literal knowledge id in the package names a section or snippet that the knowledge base holds.

Section and snippet ids (``topic/slug``) appear as literals all over ``skill/``: the rule table, the plan
advice, the structural hints of ``verify``, tool descriptions, docstrings, SKILL.md's commands. Renaming a
slug in a card must fail here, not turn into a hint or a link that points nowhere. The ids are discovered,
not listed: every string constant of every module under ``skill/`` (found with :mod:`ast`: docstrings and
the literal parts of f-strings included) and the text of ``skill/SKILL.md`` are scanned for ``topic/slug``
tokens. A token is an id when its topic is one of the cards' topics, or when its slug is hyphenated like a
card slug (so an id whose topic was renamed is caught too; MIME subtypes such as ``text/x-python`` are not
ids). Paths and URLs (``torch/distributed/fsdp``, ``utils/checkpoint.py``, ``https://…/docs/stable``) are
not tokens: a token stands alone, not inside a longer path.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from fsdp_skill.core.knowledge.cards import load_knowledge

ROOT = Path(__file__).resolve().parent.parent
SKILL = ROOT / "skill"
KB = load_knowledge()
TOPICS = set(KB.topics)
KNOWN = set(KB.sections) | set(KB.snippets)

# topic/slug standing alone: not after a word, dot, slash, colon or hyphen (a path, URL or option), and not
# followed by more of a path (another slash, a word character or a file extension)
_TOKEN = re.compile(r"(?<![\w./:-])([a-z][a-z0-9-]*)/([a-z0-9][a-z0-9-]*)(?![\w/-]|\.\w)")


def id_tokens(text: str) -> list[str]:
    """The ``topic/slug`` tokens of ``text`` that are knowledge ids by shape (see the module docstring)."""
    return [
        f"{topic}/{slug}"
        for topic, slug in _TOKEN.findall(text)
        if topic in TOPICS or ("-" in slug and not slug.startswith("x-"))
    ]


def _keyword_kind(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str | None:
    """'section' or 'snippet' when ``node`` is the value of a keyword argument of that name."""
    parent = parents.get(node)
    return parent.arg if isinstance(parent, ast.keyword) and parent.arg in ("section", "snippet") else None


def scan_python(source: str, name: str) -> list[tuple[str, str, int, str | None]]:
    """``(id, file, line, kind)`` for every id token in the string constants of ``source``; ``kind`` is
    'section' or 'snippet' where the constant is a ``section=`` / ``snippet=`` keyword argument."""
    tree = ast.parse(source, name)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    constants = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    return [(i, name, n.lineno, _keyword_kind(n, parents)) for n in constants for i in id_tokens(n.value)]


_COMMAND = re.compile(r"fsdp-skill (show|verify|export)((?: --?[\w-]+)*) ([a-z][a-z0-9-]*/[a-z0-9][a-z0-9-]*)")
_COMMAND_KIND = {"show": "section", "verify": "snippet", "export": "snippet"}


def scan_text(text: str, name: str) -> list[tuple[str, str, int, str | None]]:
    """``(id, file, line, kind)`` for every id token of a text file; ``kind`` is what a ``fsdp-skill show``
    (a section) or ``verify`` / ``export`` (a snippet) command on that line takes."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        commands = {m.group(3): _COMMAND_KIND[m.group(1)] for m in _COMMAND.finditer(line)}
        found += [(i, name, n, commands.get(i)) for i in id_tokens(line)]
    return found


def _scan_package() -> list[tuple[str, str, int, str | None]]:
    found = []
    for path in sorted(SKILL.rglob("*.py")):
        found += scan_python(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    skill_md = SKILL / "SKILL.md"
    found += scan_text(skill_md.read_text(encoding="utf-8"), str(skill_md.relative_to(ROOT)))
    return found


FOUND = _scan_package()


def test_every_literal_id_exists_in_the_knowledge():
    missing = [f"{file}:{line}: {i!r}" for i, file, line, _ in FOUND if i not in KNOWN]
    assert not missing, "ids that no card holds as a section or a snippet:\n" + "\n".join(missing)


def test_ids_used_as_sections_are_sections_and_snippets_are_snippets():
    wrong = [
        f"{file}:{line}: {i!r} is not a {kind}"
        for i, file, line, kind in FOUND
        if (kind == "section" and i not in KB.sections) or (kind == "snippet" and i not in KB.snippets)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_scan_finds_the_known_ids():
    """Self-check: the ids the code is known to name are among those discovered, in their files."""
    from fsdp_skill.core.check.rules import RULES
    from fsdp_skill.core.verify import hints

    by_file: dict[str, set[str]] = {}
    for i, file, _, _ in FOUND:
        by_file.setdefault(file, set()).add(i)
    rules = {r.section for r in RULES.values()} | {r.snippet for r in RULES.values()}
    assert rules <= by_file["skill/core/check/rules.py"], rules - by_file["skill/core/check/rules.py"]
    assert {hints.UNEVEN_INPUTS, hints.FIND_STUCK_RANK, hints.TEARDOWN} <= by_file["skill/core/verify/hints.py"]
    advice = {i for i, file, _, kind in FOUND if file == "skill/core/plan/advice.py" and kind == "section"}
    assert len(advice) >= 9, advice
    commands = {kind for i, file, _, kind in FOUND if file == "skill/SKILL.md" and kind}
    assert commands == {"section", "snippet"}, commands  # `show` and `verify`/`export` commands were recognised
    assert "join/ddp-join" in by_file["skill/core/toolspec.py"]  # an example in a tool description
    assert len({i for i, *_ in FOUND}) >= 60


@pytest.mark.parametrize(
    "text, ids",
    [
        ("see `fsdp-skill show debugging/no-such-section`.", ["debugging/no-such-section"]),
        (
            "hints: join/uneven-inputs-hang, then debuging/find-stuck-rank",
            ["join/uneven-inputs-hang", "debuging/find-stuck-rank"],
        ),
        ("torch/distributed/fsdp/api.py and utils/checkpoint.py", []),
        ("https://docs.pytorch.org/docs/stable/distributed.html", []),
        ("media type text/x-python; --param-dtype/--reduce-dtype; bf16/fp32, send/recv", []),
        ("ids look like 'topic/slug' (e.g. join/ddp-join).", ["join/ddp-join"]),
    ],
)
def test_id_tokens(text, ids):
    assert id_tokens(text) == ids


def test_a_renamed_id_is_caught():
    """What the scan reports for a source naming an id the cards lack, in each place an id can be."""
    source = (
        '"""Docstring naming debugging/find-stuck-rank."""\n'
        'HINT = "debugging/find-stuck-rnak"\n'
        'advice(section="offload/no-such-slug", snippet="join/ddp-join")\n'
        'msg = f"read {x} in fsdp2/not-a-section"\n'
    )
    found = scan_python(source, "x.py")
    assert [(i, line, kind) for i, _, line, kind in found] == [
        ("debugging/find-stuck-rank", 1, None),
        ("debugging/find-stuck-rnak", 2, None),
        ("offload/no-such-slug", 3, "section"),
        ("join/ddp-join", 3, "snippet"),
        ("fsdp2/not-a-section", 4, None),
    ]
    assert [i for i, *_ in found if i not in KNOWN] == [
        "debugging/find-stuck-rnak",
        "offload/no-such-slug",
        "fsdp2/not-a-section",
    ]
    text = scan_text("fsdp-skill show --json debugging/find-stuck-rank\nfsdp-skill verify join/ddp-join\n", "S.md")
    assert [(i, kind) for i, _, _, kind in text] == [("debugging/find-stuck-rank", "section"), ("join/ddp-join", "snippet")]
