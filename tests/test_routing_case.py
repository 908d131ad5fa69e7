"""The routing's lowercase patterns, searched in the lowercased question, find what re.IGNORECASE finds in the question.

scope.py and the router's facets compile their patterns without re.IGNORECASE and search ``question.lower()``
(half the cost of a case-insensitive search); these tests hold that change of form to the old behaviour.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fsdp_skill.core.routing import router, scope

DATA = Path(__file__).parent / "data"
SETS = [
    "questions.jsonl",
    "blind_questions.jsonl",
    "bilingual_blind_questions.jsonl",
    "public_blind.jsonl",
    "public_tuning.jsonl",
]


def _patterns() -> dict[str, re.Pattern[str]]:
    found = {f"scope.{n}": p for n, p in vars(scope).items() if isinstance(p, re.Pattern)}
    found.update({f"router._SETUP_FACETS[{i}]": p for i, p in enumerate(router._SETUP_FACETS)})
    found["router._WANTS_SCRIPT"] = router._WANTS_SCRIPT
    return found


def _questions() -> list[str]:
    out = []
    for name in SETS:
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line)["question"])
    assert len(out) > 100
    # the same questions shouted and in title case, and words of each pattern written in capitals
    out += [q.upper() for q in out] + [q.title() for q in out]
    out += [
        "How much does FSDP cost on AWS?",
        "Pip Install torch",
        "DeepSpeed VS PyTorch",
        "shard a PostgreSQL table",
        "Train 2 Nodes x 8 GPUs with BF16 and Gradient Accumulation",
        "Give me a full Training Script",
        "use Keras Instead",
    ]
    return out


def test_there_are_patterns_to_check():
    assert len(_patterns()) >= 20


@pytest.mark.parametrize("name", sorted(_patterns()))
def test_a_lowercase_pattern_has_no_capital_letter_outside_an_escape(name):
    pattern = _patterns()[name]
    assert not (pattern.flags & re.IGNORECASE)
    assert not re.search(r"(?<!\\)[A-Z]", re.sub(r"\\.", "", pattern.pattern)), pattern.pattern


@pytest.mark.parametrize("name", sorted(_patterns()))
def test_lowercased_search_finds_what_ignorecase_finds(name):
    pattern = _patterns()[name]
    insensitive = re.compile(pattern.pattern, re.IGNORECASE)
    for q in _questions():
        low = q.lower()
        a, b = pattern.search(low), insensitive.search(q)
        assert (a is None) == (b is None), (name, q)
        if a is not None and len(low) == len(q):
            assert a.span() == b.span(), (name, q)
        assert [m.span() for m in pattern.finditer(low)] == [m.span() for m in insensitive.finditer(q)] or len(low) != len(q)


def test_reasons_quote_the_question_as_written():
    assert "TensorFlow" in scope.out_of_scope_reason("How do I shard a model in TensorFlow with MirroredStrategy?")
    assert "in JAX" in scope.out_of_scope_reason("How do I do FSDP-style sharding in JAX?")
    assert "PostgreSQL" in scope.out_of_scope_reason("How do I shard a PostgreSQL table?")
