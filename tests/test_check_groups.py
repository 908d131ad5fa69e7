"""FSD009's second shape (``new_group`` given ranks built from this process's rank) on fixtures in the shapes real
code takes (a pair group, a block found by a ``while`` over the rank): each bad fixture's FSD009 findings are
exactly its marked lines, each good fixture (every group created on every rank) has none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fsdp_skill.core.check import check_source

DATA = Path(__file__).parent / "data" / "check"
FIXTURES = sorted((DATA / "groups").glob("*.py"))
MARK = re.compile(r"#\s*<-\s*FSD009")


def _found(src: str) -> set[int]:
    return {f.line for f in check_source(src, "t.py") if f.code == "FSD009"}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_findings_are_exactly_the_marked_lines(path):
    marked = {i for i, line in enumerate(path.read_text().splitlines(), 1) if MARK.search(line)}
    assert ("_bad" in path.name) == bool(marked)
    assert _found(path.read_text()) == marked


def test_message_shows_the_ranks_given():
    (f,) = [f for f in check_source((DATA / "groups" / "pair_groups_bad.py").read_text(), "t.py") if f.line == 10]
    assert "sorted([rank, partner])" in f.message and "same ranks" in f.message


def test_under_a_rank_condition_reported_once():
    src = "import torch.distributed as dist\n\ndef g():\n    rank = dist.get_rank()\n    if rank < 2:\n        return dist.new_group([rank])\n"
    assert [f.line for f in check_source(src, "t.py") if f.code == "FSD009"] == [6]


def test_local_synchronization_lets_only_the_members_call():
    src = (DATA / "groups" / "pair_groups_bad.py").read_text()
    src = src.replace("sorted([rank, partner]))", "sorted([rank, partner]), use_local_synchronization=True)")
    assert _found(src) == {19}
