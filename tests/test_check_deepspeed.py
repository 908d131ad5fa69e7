"""The DeepSpeed engine's step (FSD082) on fixtures in the shapes real code takes (a loop over the engine
``deepspeed.initialize`` returns, a trainer class keeping it in ``self.engine``): each bad fixture's findings are
exactly the lines marked ``# <- FSD082``, each good fixture has none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fsdp_skill.core.check import check_source

DATA = Path(__file__).parent / "data" / "check"
FIXTURES = sorted((DATA / "deepspeed").glob("*.py")) + [DATA / "FSD082_bad.py", DATA / "FSD082_good.py"]
MARK = re.compile(r"#\s*<-\s*(FSD\d{3})")


def _marked(path: Path) -> set[int]:
    return {i for i, line in enumerate(path.read_text().splitlines(), 1) if MARK.search(line)}


def _found(path: Path) -> set[int]:
    return {f.line for f in check_source(path.read_text(), str(path)) if f.code == "FSD082"}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_findings_are_exactly_the_marked_lines(path):
    assert ("_bad" in path.name) == bool(_marked(path)), path
    assert _found(path) == _marked(path)


def test_message_names_the_loss_and_the_engine():
    (finding,) = [f for f in check_source((DATA / "FSD082_bad.py").read_text(), "t.py") if f.code == "FSD082"]
    assert "`loss.backward()`" in finding.message and "`engine` (line 11)" in finding.message


def test_silent_without_deepspeed():
    src = (DATA / "FSD082_bad.py").read_text().replace("import deepspeed\n", "")
    assert [f for f in check_source(src, "t.py") if f.code == "FSD082"] == []


def test_engine_backward_in_the_bad_shape_is_silent():
    src = (DATA / "FSD082_bad.py").read_text().replace("loss.backward()  # <- FSD082", "engine.backward(loss)")
    assert [f for f in check_source(src, "t.py") if f.code == "FSD082"] == []
