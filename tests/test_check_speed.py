"""The checker's cost on long shapes, counted, never timed (issue 23's speed, issue 25's probe rows): an ``if`` /
``elif`` chain of rank tests costs work linear in its length, the shortcuts give the answers the plain walks gave,
and ``check_paths`` holds off full garbage collections while it runs and restores the thresholds after."""

from __future__ import annotations

import ast
import gc
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from fsdp_skill.core.check import check_paths, check_source, files
from fsdp_skill.core.check import facts as facts_module
from fsdp_skill.core.check.calls import build_facts
from fsdp_skill.core.check.facts import _EXITS, _RANK_ZERO_DECORATORS, FileFacts, last_name
from fsdp_skill.core.check.project import Project

DATA = Path(__file__).parent / "data" / "check"
HEAD = "import torch\nimport torch.distributed as dist\n\nrank = dist.get_rank()\nt = torch.zeros(1)\n"
NO_COLLECTIVE = "    x = rank * 2\n    print(x)\n"


def chain(n: int, body: str = NO_COLLECTIVE) -> str:
    """``if rank == 0: ... elif rank == 1: ...``: ``n`` branches, each running ``body``."""
    return HEAD + "".join(("if" if i == 0 else "elif") + f" rank == {i}:\n" + body for i in range(n))


def fixtures() -> list[Path]:
    """The check fixtures (the blind set left out: it is never looked at by the checker's tests)."""
    return sorted(p for p in DATA.rglob("*.py") if not any(part.startswith("blind") for part in p.relative_to(DATA).parts))


def work(monkeypatch: pytest.MonkeyPatch, source: str) -> int:
    """Steps of ``check_source(source)``: the facts' ticks plus every node an ``ast.walk`` yields."""
    count = 0
    real_walk, real_tick = ast.walk, FileFacts.tick

    def walk(node: ast.AST) -> Iterator[ast.AST]:
        nonlocal count
        for sub in real_walk(node):
            count += 1
            yield sub

    def tick(self: FileFacts) -> None:
        nonlocal count
        count += 1
        real_tick(self)

    with monkeypatch.context() as m:
        m.setattr(ast, "walk", walk)
        m.setattr(FileFacts, "tick", tick)
        check_source(source, "chain.py")
    return count


def test_an_elif_chain_of_rank_tests_costs_work_linear_in_its_length(monkeypatch):
    # each elif used to walk the rest of the chain (rank_branches, the no_sync() search of FSD060, FSD046's search of
    # the agreeing collectives): 4x the work for 2x the branches, 800 branches in 4.6 s
    small, large = work(monkeypatch, chain(100)), work(monkeypatch, chain(200))
    assert large / small < 2.3, f"work {small:,} for 100 branches, {large:,} for 200: grows faster than the chain"


def test_a_long_chain_is_still_checked_whole():
    src = chain(800) + "if rank == 800:\n    dist.barrier()\n"
    found = [(f.code, f.line) for f in check_source(src, "chain.py")]
    assert found == [("FSD003", src.count("\n"))]


def _walked_rank_branches(facts: FileFacts) -> dict[int, list[ast.stmt]]:
    """rank_branches as it was written before: a walk of each rank branch (and of what follows an exiting one)."""
    out: dict[int, list[ast.stmt]] = {}
    for node in facts.nodes:
        if isinstance(node, ast.If) and facts.is_rank_test(node.test):
            covered = [*node.body, *node.orelse]
            if not node.orelse and node.body and isinstance(node.body[-1], _EXITS):
                parent = facts.parents[id(node)]
                block = next(b for name in ("body", "orelse", "finalbody") if node in (b := getattr(parent, name, [])))
                covered += block[block.index(node) + 1 :]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            last_name(d) in _RANK_ZERO_DECORATORS for d in node.decorator_list
        ):
            covered = list(node.body)
        else:
            continue
        for stmt in covered:
            for sub in ast.walk(stmt):
                out.setdefault(id(sub), []).append(node)
    return out


SHAPES = {
    "exits": HEAD + "def f():\n    if rank != 0:\n        return\n    if rank == 1:\n        return\n    dist.barrier()\n",
    "nested": HEAD + "if rank == 0:\n    if rank == 1:\n        dist.barrier()\n    else:\n        x = [i for i in t]\n",
    "decorated": HEAD + "@rank_zero_only\ndef save(m):\n    if rank == 0:\n        dist.barrier()\n",
    "loop": HEAD
    + "for s in t:\n    if rank > 0:\n        continue\n    try:\n        dist.barrier()\n    finally:\n        pass\n",
    "chain": chain(30),
}


@pytest.mark.parametrize("source", [*SHAPES.values(), *(p.read_text(encoding="utf-8") for p in fixtures())])
def test_rank_branches_are_those_the_walk_of_each_branch_gave(source):
    try:
        tree = ast.parse(source)
    except SyntaxError:
        pytest.skip("a fixture that does not parse on this Python")
    facts = build_facts(tree)
    # the operator singletons (one Eq() shared by every comparison, indexed once per comparison) are no node of the file's own
    own = {k for k, times in Counter(id(n) for n in facts.nodes).items() if times == 1}
    got = {k: [id(b) for b in v] for k, v in facts.rank_branches().items() if k in own}
    want = {k: [id(b) for b in v] for k, v in _walked_rank_branches(facts).items() if k in own}
    assert got == want


def _climbed_block_of(facts: FileFacts, node: ast.AST, holder: ast.AST) -> str | None:
    """block_of as it was written before: climb from ``node`` to the child of ``holder``."""
    cur = node
    while (parent := facts.parents.get(id(cur))) is not holder:
        if parent is None:
            return None
        cur = parent
    return next((name for name in ("body", "orelse", "finalbody") if cur in getattr(holder, name, [])), None)


def test_block_of_a_node_deep_below_its_holder_is_the_block_the_climb_finds():
    src = chain(3 * facts_module._SHORT_CLIMB, body="    dist.all_reduce(t)\n")
    src += "if rank:\n    pass\nelse:\n    y = [dist.barrier() for _ in t]\n"
    facts = build_facts(ast.parse(src))
    ifs = [n for n in facts.nodes if isinstance(n, ast.If)]
    asked = [n for n in facts.nodes if isinstance(n, (ast.Call, ast.Compare, ast.stmt, ast.comprehension))]
    assert all(facts.block_of(n, holder) == _climbed_block_of(facts, n, holder) for holder in ifs for n in asked)
    deepest = [c for c in facts.calls() if (facts.qual(c) or "").endswith("all_reduce")][-1]
    assert facts.block_of(deepest, ifs[0]) == "orelse"  # far below the first if: in its elif chain


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    """The interpreter's thresholds before the test, put back after it whatever it did."""
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def _project_sees(monkeypatch: pytest.MonkeyPatch, seen: list[tuple[int, int, int]], fail: bool = False) -> None:
    real = Project.build

    def build(sources: list[tuple[str, str]], **kwargs: float) -> Project:
        seen.append(gc.get_threshold())
        if fail:
            raise RuntimeError("boom")
        return real(sources, **kwargs)

    monkeypatch.setattr(Project, "build", staticmethod(build))


def test_checking_paths_holds_off_full_collections_and_restores_the_thresholds(monkeypatch, tmp_path, thresholds):
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(HEAD + "if rank == 0:\n    dist.barrier()\n", encoding="utf-8")
    seen: list[tuple[int, int, int]] = []
    _project_sees(monkeypatch, seen)
    assert [f.code for f in check_paths([str(tmp_path)])] == ["FSD003", "FSD003"]
    assert seen == [(thresholds[0], thresholds[1], files._NO_FULL_GC)]  # the young generations as they were
    assert gc.get_threshold() == thresholds


def test_the_thresholds_come_back_when_the_check_fails(monkeypatch, tmp_path, thresholds):
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("x = 1\n", encoding="utf-8")
    seen: list[tuple[int, int, int]] = []
    _project_sees(monkeypatch, seen, fail=True)
    with pytest.raises(RuntimeError, match="boom"):
        check_paths([str(tmp_path)])
    assert seen[0][2] == files._NO_FULL_GC
    assert gc.get_threshold() == thresholds


def test_overlapping_checks_restore_the_thresholds_when_the_last_ends(thresholds):
    first, second = files.fewer_full_collections(), files.fewer_full_collections()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # a server thread's check ends while another's runs
    assert gc.get_threshold()[2] == files._NO_FULL_GC
    second.__exit__(None, None, None)
    assert gc.get_threshold() == thresholds
