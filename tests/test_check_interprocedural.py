"""``check`` follows the wrapped module and the rank conditions through helpers (issue 23): arguments, return values,
``self.`` attributes across methods, closures, simple wrappers, and the files of a checked directory. Each fixture
under ``tests/data/check/interprocedural/`` marks its expected findings with ``# <- FSDxxx``; a ``*_good`` fixture
marks none and must stay silent for the rules these facts feed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fsdp_skill.core.check import check_paths, check_source

DATA = Path(__file__).parent / "data" / "check" / "interprocedural"
MARK = re.compile(r"#\s*<-\s*(FSD\d{3})")
# the rules whose finders ask "is this a wrapped module" / "is this under a rank condition", and the idioms' rules
CODES = {"FSD001", "FSD002", "FSD006", "FSD031", "FSD010", "FSD021", "FSD027", "FSD035", "FSD039", "FSD045"}


def _expected(path: Path) -> set[tuple[int, str]]:
    return {(i, m.group(1)) for i, line in enumerate(path.read_text().splitlines(), 1) for m in MARK.finditer(line)}


SINGLE = sorted(DATA.glob("*.py"))


def test_every_shape_has_a_bad_and_a_good_fixture():
    names = {p.stem for p in SINGLE}
    shapes = ("argument_fsdp1", "argument_fsdp2", "return_fsdp1", "self_attribute", "closure", "wrapper", "sampler")
    for shape in (*shapes, "ddp_evaluate", "framework_save", "frozen", "trainer_optimizer"):
        assert f"{shape}_bad" in names and f"{shape}_good" in names, shape
    assert (DATA / "project_bad").is_dir() and (DATA / "project_good").is_dir()


@pytest.mark.parametrize("path", SINGLE, ids=lambda p: p.stem)
def test_single_file_fixture(path):
    found = {(f.line, f.code) for f in check_source(path.read_text(), str(path)) if f.code in CODES}
    assert found == _expected(path)


def test_must_show_apply_fsdp_and_evaluate():
    """The issue's script: ``apply_fsdp(model)`` after the optimizer, ``if rank == 0: evaluate(model)``: both found,
    the second naming the helper and the forward inside it."""
    path = DATA / "must_show_apply_fsdp_evaluate.py"
    found = {f.code: f for f in check_source(path.read_text(), str(path))}
    assert {"FSD001", "FSD010"} <= set(found)
    assert "(wrapped at line 44)" in found["FSD001"].message
    assert found["FSD010"].message.startswith("evaluate(), which runs model(...) (forward of an FSDP module) at line 33")


def test_ddp_model_evaluated_on_rank_0_inside_a_helper_is_fsd045():
    """``if rank == 0: evaluate(model)`` with a DDP model whose forward runs inside ``evaluate`` (and a method reaching
    it through ``self.model``): FSD045 at the call, naming the helper and the forward; ``evaluate(model.module)`` on
    rank 0 and a wrapper built with ``broadcast_buffers=False`` stay silent."""
    path = DATA / "ddp_evaluate_bad.py"
    found = {f.line: f for f in check_source(path.read_text(), str(path)) if f.code == "FSD045"}
    assert set(found) == {28, 40}
    assert found[40].message.startswith("evaluate(), which runs model(...) (forward through a DDP wrapper) at line 13,")
    assert found[28].message.startswith("self.validate(), which runs self.model(...) (forward through a DDP wrapper) at line 22,")
    for good in ("ddp_evaluate_good.py", "ddp_evaluate_good_no_broadcast.py"):
        assert not [f for f in check_source((DATA / good).read_text(), good) if f.code == "FSD045"], good


def test_trainer_saved_on_rank_0_inside_a_helper_is_fsd039():
    """A Trainer with FSDP built by a helper (its return value), then saved on the main process only inside a helper
    given it as a parameter, inside a method holding it in ``self.trainer``, and by a helper called under the rank
    condition: FSD039 each time; saved on every rank, silent."""
    path = DATA / "framework_save_bad.py"
    found = {f.line: f for f in check_source(path.read_text(), str(path)) if f.code == "FSD039"}
    assert set(found) == {15, 28, 37}
    assert found[15].message.startswith("trainer.save_model() (Hugging Face Trainer with FSDP) runs only on some ranks")
    assert found[37].message.startswith("export(), which calls trainer.save_model() (Hugging Face Trainer with FSDP) at line 19,")
    good = DATA / "framework_save_good.py"
    assert not [f for f in check_source(good.read_text(), str(good)) if f.code == "FSD039"]


def test_fix_is_planned_on_the_facts_the_rule_saw():
    """FSD012 on a model wrapped by a helper (``model = wrap(net)``): ``--fix`` plans ``model.clip_grad_norm_`` on
    the same facts, through the helper, rather than calling the module unknown."""
    code = (
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n\n"
        "def wrap(m):\n    return FSDP(m)\n\n\n"
        "def step(net, x):\n    model = wrap(net)\n    model(x).sum().backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    )
    found = [f for f in check_source(code) if f.code == "FSD012"]
    assert [(f.line, f.fix) for f in found] == [(12, "call model.clip_grad_norm_(...) (the norm over all shards)")]


def _project_expected(root: Path) -> set[tuple[str, int, str]]:
    return {(str(p), line, code) for p in sorted(root.rglob("*.py")) for line, code in _expected(p)}


def test_project_follows_helpers_across_files():
    """A directory is one project: ``from pkg.helpers import apply_fsdp, evaluate`` and ``helpers.sample(model)``
    are followed into the other file (FSD001 / FSD010 in train.py, FSD021 in helpers.py)."""
    root = DATA / "project_bad"
    found = {(f.path, f.line, f.code) for f in check_paths([str(root)]) if f.code in CODES}
    assert found == _project_expected(root)
    msg = next(f.message for f in check_paths([str(root)]) if f.code == "FSD010")
    assert msg.startswith(f"evaluate(), which runs model(...) (forward of an FSDP module) at {root / 'pkg' / 'helpers.py'}:16")


def test_project_good_is_silent():
    assert [f.line_text() for f in check_paths([str(DATA / "project_good")]) if f.code in CODES] == []


def test_single_file_of_a_project_keeps_todays_behaviour():
    """Checked alone, train.py cannot see inside its helpers: silent, as before."""
    path = DATA / "project_bad" / "train.py"
    assert [f.line_text() for f in check_paths([str(path)]) if f.code in CODES] == []


def test_fsd027_only_where_the_project_does_distributed_work():
    """The plain model file: silent alone, FSD027 when the directory (whose train.py wraps it in DDP) is checked."""
    root = DATA / "ac_project"
    assert [f for f in check_paths([str(root / "model.py")]) if f.code == "FSD027"] == []
    found = {(f.path, f.line, f.code) for f in check_paths([str(root)]) if f.code == "FSD027"}
    assert found == _project_expected(root)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_relative_import_and_constructor_across_files(tmp_path):
    """``from .helpers import shard`` inside a package, and a ``Trainer`` class of another file given the module."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/helpers.py": "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n\n"
            "def shard(m):\n    return FSDP(m)\n",
            "pkg/trainer.py": "class Trainer:\n    def __init__(self, model):\n        self.model = model\n\n"
            "    def validate(self, x):\n        return self.model(x)\n",
            "pkg/run.py": "import torch.distributed as dist\n\nfrom .helpers import shard\nfrom .trainer import Trainer\n\n\n"
            "def main(net, x):\n    model = shard(net)\n    t = Trainer(model)\n    if dist.get_rank() == 0:\n"
            "        model(x)\n    return t\n",
        },
    )
    found = {(Path(f.path).name, f.line, f.code) for f in check_paths([str(tmp_path)]) if f.code in CODES}
    assert found == {("run.py", 11, "FSD010")}
    # the module reached Trainer.__init__ in trainer.py: its self.model is FSDP1 there
    found = {(Path(f.path).name, f.line, f.code) for f in check_paths([str(tmp_path / "pkg")]) if f.code in CODES}
    assert found == {("run.py", 11, "FSD010")}


def test_project_with_a_broken_file_checks_the_others(tmp_path):
    _write(
        tmp_path,
        {
            "bad.py": "def f(:\n",
            "helpers.py": "def evaluate(model, x):\n    return model(x)\n",
            "train.py": "import torch.distributed as dist\nfrom torch.distributed.fsdp import fully_shard\n"
            "from helpers import evaluate\n\n\ndef main(model, x):\n    fully_shard(model)\n"
            "    if dist.get_rank() == 0:\n        evaluate(model, x)\n",
        },
    )
    found = {(Path(f.path).name, f.line, f.code) for f in check_paths([str(tmp_path)])}
    assert ("bad.py", 1, "FSD000") in found and ("train.py", 9, "FSD010") in found


def test_recursive_and_long_helper_chains_terminate():
    """Recursion and a chain of 300 helpers are followed a bounded depth, never forever (nor past the stack)."""
    chain = "".join(f"def h{i}(m):\n    return h{i + 1}(m)\n\n\n" for i in range(300))
    code = (
        "import torch.distributed as dist\nfrom torch.distributed.fsdp import fully_shard\n\n\n"
        "def loop(m):\n    return loop(m)\n\n\n"
        "def ping(m):\n    return pong(m)\n\n\ndef pong(m):\n    return ping(m)\n\n\n"
        f"{chain}def h300(m):\n    return m(1)\n\n\n"
        "def main(model):\n    fully_shard(model)\n    loop(model)\n    ping(model)\n    if dist.get_rank() == 0:\n"
        "        h299(model)\n"
    )
    found = [f for f in check_source(code) if f.code == "FSD010"]
    assert len(found) == 1
    assert found[0].message.startswith("h299(), which runs m(...) (forward of an FSDP module) at line 1218,")


def test_helper_called_with_a_plain_module_is_not_wrapped():
    """Parameters hold a wrapped module only when a call passes one: ``evaluate(ema)`` on rank 0 is fine."""
    path = DATA / "plain_helpers_good.py"
    assert [f.line_text() for f in check_source(path.read_text(), str(path))] == []


def test_a_project_file_is_parsed_once_and_its_tree_used_only_for_the_same_text(tmp_path):
    """check_paths parses each file of a project once: the engine checks the tree the project's facts are of; a
    different text under the same label is parsed anew (its findings are its own)."""
    from fsdp_skill.core.check.engine import check_source
    from fsdp_skill.core.check.project import Project

    a = "import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n"
    b = "x = 1\n"
    project = Project.build([("a.py", a), ("b.py", b)])
    assert project.tree_for("a.py", a) is not None and project.tree_for("a.py", b) is None
    assert [f.code for f in check_source(a, "a.py", project=project)] == ["FSD003"]
    assert check_source(b, "a.py", project=project) == []


def test_an_optimizer_given_to_the_sharding_helper_is_not_reported():
    """FSD001 stays silent when the helper that shards the model is given the optimizer too."""
    path = DATA / "optimizer_given_to_helper.py"
    found = [(f.line, f.code) for f in check_source(path.read_text(), str(path))]
    assert found == [(21, "FSD001")]


_ZERO_FIRST = (
    "import torch.distributed as dist\nfrom contextlib import contextmanager\n\n\n@contextmanager\n"
    "def torch_distributed_zero_first(local_rank):\n    if local_rank not in [-1, 0]:\n        dist.barrier()\n"
    "    yield\n    if local_rank == 0:\n        dist.barrier()\n"
)


def test_arguments_that_make_every_barrier_of_a_helper_false_across_files(tmp_path):
    """yolov5's shape over four files: ``torch_distributed_zero_first(local_rank)`` (utils/torch_utils.py) inside
    ``create_dataloader(..., rank=-1)`` (utils/dataloaders.py), called on rank 0 with ``rank=-1`` and through
    ``val.run`` (which leaves ``rank`` at its default): no barrier is reached there. Passing the local rank on rank 0
    alone reaches the first process's barrier: FSD003 at that call, and at the call of the helper that passes it."""
    _write(
        tmp_path,
        {
            "utils/__init__.py": "",
            "utils/torch_utils.py": _ZERO_FIRST,
            "utils/dataloaders.py": "from utils.torch_utils import torch_distributed_zero_first\n\n\n"
            "def create_dataloader(path, batch_size, rank=-1, workers=8):\n"
            "    with torch_distributed_zero_first(rank):\n        dataset = [path] * batch_size\n    return dataset\n",
            "val.py": "from utils.dataloaders import create_dataloader\n\n\n"
            "def run(data, batch_size=32, model=None, dataloader=None):\n    if model is None:\n"
            "        dataloader = create_dataloader(data, batch_size)\n    return len(dataloader)\n\n\n"
            "def run_local(data, local_rank):\n    return create_dataloader(data, 8, rank=local_rank)\n",
            "train.py": "import os\n\nimport val as validate\nfrom utils.dataloaders import create_dataloader\n\n"
            'LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))\nRANK = int(os.getenv("RANK", -1))\n\n\n'
            "def train(opt, model):\n    loader = create_dataloader(opt.train, 16, rank=LOCAL_RANK)\n"
            "    if RANK in {-1, 0}:\n        val_loader = create_dataloader(opt.val, 32, rank=-1)\n"
            "        validate.run(opt.data, model=model, dataloader=val_loader)\n"
            "        validate.run(opt.data)\n"
            "    if RANK == 0:\n        create_dataloader(opt.val, 32, rank=LOCAL_RANK)\n"
            "        validate.run_local(opt.val, LOCAL_RANK)\n    return loader\n",
        },
    )
    found = {(Path(f.path).name, f.line, f.code) for f in check_paths([str(tmp_path)]) if f.code.startswith("FSD00")}
    assert found == {("train.py", 17, "FSD003"), ("train.py", 18, "FSD003")}
