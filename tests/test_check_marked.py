"""The marked fixtures of the rule families under ``tests/data/check/<family>/``: each rule of a family has a bad
shape (``*_bad.py``, its findings marked ``# <- FSDxxx`` on their lines) and a good one (``*_good.py``, the same
code one edit apart, no finding), and the checker finds exactly the marked lines in each (findings of any rule, so
a family's fixture that trips another rule fails too)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fsdp_skill.core.check import check_source

DATA = Path(__file__).parent / "data" / "check"
MARK = re.compile(r"#\s*<-\s*(FSD\d{3})")
# family folder -> the rules it holds (skill/core/check/<module>.py registers them)
FAMILIES = {
    "divergence": {"FSD037", "FSD038", "FSD040", "FSD045", "FSD046"},  # divergence.py
    "device": {"FSD047", "FSD048", "FSD049", "FSD050", "FSD051", "FSD052", "FSD053"},  # device_rules.py
    "flow": {"FSD054", "FSD055", "FSD056", "FSD057", "FSD058", "FSD059", "FSD060"},  # flow_rules.py
    "data": {
        "FSD061",
        "FSD064",
        "FSD065",
        "FSD066",
        "FSD067",
        "FSD068",
        "FSD073",
    },  # data_rules.py (FSD062/FSD063: one line each, top-level fixtures)
    "checkpoint": {"FSD069", "FSD070", "FSD071", "FSD072"},  # checkpoint_rules.py
    "step": {"FSD077", "FSD078", "FSD079", "FSD080"},  # step_rules.py
    "setup": {"FSD074", "FSD075", "FSD076", "FSD084", "FSD085"},  # setup_rules.py
    "metric": {"FSD086", "FSD087", "FSD088"},  # metric_rules.py
    "accelerate": {"FSD089", "FSD090"},  # accelerate_rules.py
}
FIXTURES = [path for family in FAMILIES for path in sorted((DATA / family).glob("*.py"))]


def _expected(path: Path) -> set[tuple[int, str]]:
    """(line, code) of every ``# <- FSDxxx`` mark of a fixture."""
    return {(i, m.group(1)) for i, line in enumerate(path.read_text().splitlines(), 1) for m in MARK.finditer(line)}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_rule_has_a_bad_and_a_good_shape(family):
    paths = sorted((DATA / family).glob("*.py"))
    bad = {code for p in paths if p.stem.endswith("_bad") for _, code in _expected(p)}
    assert FAMILIES[family] <= bad
    assert {p.stem.rsplit("_", 1)[0] for p in paths if p.stem.endswith("_good")} == {
        p.stem.rsplit("_", 1)[0] for p in paths if p.stem.endswith("_bad")
    }


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_findings_are_exactly_the_marked_lines(path):
    """Every finding of any rule is marked: a good shape has none, a bad one only what its marks say."""
    found = {(f.line, f.code) for f in check_source(path.read_text(), str(path))}
    assert found == _expected(path)
