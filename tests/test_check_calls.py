"""The framework-save, multi-node path, device ordinal and FSDP1 generate rules (FSD039, FSD041, FSD042, FSD044)
on fixtures in the shapes real code takes (HF Trainer scripts, accelerate loops, Lightning callbacks, SLURM
classes): each bad fixture's findings of its rule are exactly the lines marked ``# <- FSDxxx``, each good fixture
has none; and the rank-origin facts those rules stand on."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from fsdp_skill.core.check import check_source
from fsdp_skill.core.check.calls_rules import condition_kind, rank_kind
from fsdp_skill.core.check.facts import FileFacts

DATA = Path(__file__).parent / "data" / "check"
CALLS = sorted((DATA / "calls").glob("FSD*.py"))
MARK = re.compile(r"#\s*<-\s*(FSD\d{3})")
CODES = ("FSD039", "FSD041", "FSD042", "FSD044")


def _marked(path: Path, code: str) -> set[int]:
    return {i for i, line in enumerate(path.read_text().splitlines(), 1) for m in MARK.finditer(line) if m.group(1) == code}


def _found(path: Path, code: str) -> set[int]:
    return {f.line for f in check_source(path.read_text(), str(path)) if f.code == code}


def test_every_rule_has_framework_shaped_fixtures():
    for code in CODES:
        kinds = {p.name.split("_")[1] for p in CALLS if p.name.startswith(code)} | {"bad", "good"}
        assert {"bad", "good"} <= kinds, code
    assert len(CALLS) >= 8


@pytest.mark.parametrize(
    "path", [p for p in CALLS if "_bad" in p.name] + [DATA / f"{c}_bad.py" for c in CODES], ids=lambda p: p.stem
)
def test_bad_fixture_findings_are_exactly_the_marked_lines(path):
    code = path.name.split("_", 1)[0]
    assert _marked(path, code), f"{path} marks no line"
    assert _found(path, code) == _marked(path, code)


@pytest.mark.parametrize(
    "path", [p for p in CALLS if "_good" in p.name] + [DATA / f"{c}_good.py" for c in CODES], ids=lambda p: p.stem
)
def test_good_fixture_is_silent_for_its_rule(path):
    code = path.name.split("_", 1)[0]
    assert _found(path, code) == set()


def test_fsdp1_state_dict_on_rank0_is_reported_once_by_fsd006_not_again_by_fsd039():
    path = DATA / "calls" / "FSD039_good_fsdp1_helper.py"
    codes = [f.code for f in check_source(path.read_text(), str(path))]
    assert codes.count("FSD006") == 1 and "FSD039" not in codes


def test_a_helper_that_saves_is_reported_at_its_rank0_call_naming_the_save():
    src = (
        "from accelerate import Accelerator, FullyShardedDataParallelPlugin\n"
        "def save(accelerator, model):\n"
        "    return accelerator.get_state_dict(model)\n"
        "def main(model):\n"
        "    acc = Accelerator(fsdp_plugin=FullyShardedDataParallelPlugin())\n"
        "    if acc.is_main_process:\n"
        "        save(acc, model)\n"
    )
    (f,) = [f for f in check_source(src, "t.py") if f.code == "FSD039"]
    assert (
        f.line == 7
        and "save(), which calls accelerator.get_state_dict() (accelerate with FSDP)" in f.message
        and "line 3" in f.message
    )


def test_accelerate_save_state_without_fsdp_in_the_file_is_not_judged():
    src = "from accelerate import Accelerator\nacc = Accelerator()\nif acc.is_main_process:\n    acc.save_state('c')\n"
    assert [f for f in check_source(src, "t.py") if f.code == "FSD039"] == []


@pytest.mark.parametrize(
    ("imports", "bind", "want"),
    [
        ("import deepspeed", "engine, opt, _, _ = deepspeed.initialize(model=net)", [5]),
        ("import deepspeed", "engine = deepspeed.initialize(model=net)[0]", [5]),
        ("import deepspeed", "engine = make_engine(net)", []),  # built elsewhere, by something else
        ("import deepspeed", "pass", [5]),  # unknown origin, but an engine by name in a DeepSpeed file
        ("import torch", "engine, opt, _, _ = build(model=net)", []),  # no DeepSpeed in the file
        ("import deepspeed\nimport lightning", "pass", []),  # engine-named, but Lightning: the file cannot tell
    ],
)
def test_deepspeed_save_checkpoint_on_rank_0_needs_a_deepspeed_engine(imports, bind, want):
    src = f"{imports}\ndef main(net, rank):\n    {bind}\n    if rank == 0:\n        engine.save_checkpoint('ckpt')\n"
    assert [f.line for f in check_source(src, "t.py") if f.code == "FSD039"] == want


def _facts(src: str) -> tuple[FileFacts, list[ast.expr]]:
    tree = ast.parse(src)
    facts = FileFacts.build(tree)
    probes = [n.value for n in ast.walk(tree) if isinstance(n, ast.Expr)]
    return facts, probes


@pytest.mark.parametrize(
    ("setup", "expr", "kind"),
    [
        ("r = dist.get_rank()", "r", "global"),
        ("r = int(os.environ['RANK'])", "r", "global"),
        ("r = int(os.environ.get('SLURM_PROCID', 0))", "r", "global"),
        ("local_rank = dist.get_rank()", "local_rank", "global"),  # named local, holds the global rank
        ("r = int(os.environ['LOCAL_RANK'])", "r", "local"),
        ("pass", "args.local_rank", "local"),
        ("pass", "accelerator.local_process_index", "local"),
        ("pass", "rank", None),  # a parameter of unknown origin (mp.spawn's index)
        ("r = dist.get_rank() % torch.cuda.device_count()", "r", None),
        ("local_rank = deepspeed.comm.get_local_rank()", "local_rank", "local"),  # the node-local rank API
        ("r = dist.get_node_local_rank(fallback_rank=0)", "r", "local"),
        ("local_rank = gpc.get_local_rank(ParallelMode.DATA)", "local_rank", None),  # ColossalAI: rank in a group
    ],
)
def test_rank_kind_tells_the_global_rank_from_the_local_one(setup, expr, kind):
    facts, probes = _facts(
        f"import os\nimport torch\nimport torch.distributed as dist\ndef f(rank, args, accelerator):\n    {setup}\n    {expr}\n"
    )
    assert rank_kind(facts, probes[-1]) == kind


@pytest.mark.parametrize(
    ("test", "kind"),
    [
        ("local_rank == 0", "local"),
        ("accelerator.is_local_main_process", "local"),
        ("trainer.is_local_process_zero()", "local"),
        ("int(os.environ['LOCAL_RANK']) == 0", "local"),
        ("dist.get_rank() == 0", "global"),
        ("accelerator.is_main_process", "global"),
        ("local_rank == 0 and dist.get_rank() == 0", "global"),
    ],
)
def test_condition_kind(test, kind):
    facts, probes = _facts(f"import os\nimport torch.distributed as dist\ndef f(local_rank, accelerator, trainer):\n    {test}\n")
    assert condition_kind(facts, probes[-1]) == kind


def test_fsd041_is_silent_when_every_call_of_the_saving_function_is_on_the_global_main_process():
    """A save under is_local_main_process inside save(), which the file only calls under is_main_process: only the
    global rank 0 reaches it (the accelerate trainer shape); called from anywhere else it is reported."""
    from fsdp_skill.core.check import check_source

    code = (
        "import torch\n"
        "class Trainer:\n"
        "    def save(self, step):\n"
        "        if not self.accelerator.is_local_main_process:\n"
        "            return\n"
        "        torch.save(self.model.state_dict(), 'model.pt')\n"
        "    def train(self):\n"
        "        for step in range(10):\n"
        "            if self.accelerator.is_main_process:\n"
        "                self.save(step)\n"
    )
    assert [f.code for f in check_source(code) if f.code == "FSD041"] == []
    other = code + "    def finish(self):\n        self.save(-1)\n"
    assert [f.code for f in check_source(other) if f.code == "FSD041"] == ["FSD041"]


def test_fsd041_a_rank_in_a_parallel_group_is_not_a_local_rank_but_the_node_local_api_is():
    """ColossalAI's ``gpc.get_local_rank(ParallelMode.DATA)`` is the rank inside the data-parallel group (diffusers'
    DreamBooth example: only the global rank 0 has 0 there); DeepSpeed's ``get_local_rank()`` is the rank on the node."""
    path = DATA / "FSD041_good_group_local_rank.py"
    assert _found(path, "FSD041") == set()
    src = path.read_text().replace("gpc.get_local_rank(ParallelMode.DATA)", "deepspeed.comm.get_local_rank()")
    assert [f.line for f in check_source("import deepspeed\n" + src, "t.py") if f.code == "FSD041"] == [20, 22]
