"""FSD069-FSD072 (``skill/core/check/checkpoint_rules.py``): the marked fixtures of ``tests/data/check/checkpoint/``
are checked in ``tests/test_check_marked.py``; this file holds the edges and the two-file package shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsdp_skill.core.check import check_paths, check_source

CODES = {"FSD069", "FSD070", "FSD071", "FSD072"}


def _codes(code: str, only: set[str] = CODES) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source(code, "t.py") if f.code in only]


PREFIX = """
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
net = nn.Linear(2, 2)
wrapped = {wrap}
torch.save({saved}.state_dict(), "ckpt.pt")
fresh = nn.Linear(2, 2)
{into}.load_state_dict(torch.load("ckpt.pt"){extra})
"""


@pytest.mark.parametrize(
    ("wrap", "saved", "into", "extra", "want"),
    [
        ("DDP(net)", "wrapped", "net", "", [(9, "FSD069")]),
        ("nn.DataParallel(net)", "wrapped", "net", "", [(9, "FSD069")]),
        ("DDP(net)", "wrapped.module", "wrapped", "", [(9, "FSD069")]),  # the reverse: bare keys into the wrapper
        ("DDP(net)", "net", "wrapped", "", [(9, "FSD069")]),
        ("DDP(net)", "wrapped", "wrapped", "", []),
        ("DDP(net)", "wrapped.module", "net", "", []),
        ("DDP(net)", "wrapped", "net", ", strict=False", [(9, "FSD069")]),  # no key matches: nothing is loaded, silently
        ("DDP(net)", "wrapped.module", "net", ", strict=False", []),
        ("DDP(net)", "wrapped", "fresh", "", []),  # the file does not show that `fresh` is not wrapped elsewhere
    ],
)
def test_prefix_directions(wrap, saved, into, extra, want):
    assert _codes(PREFIX.format(wrap=wrap, saved=saved, into=into, extra=extra), {"FSD069"}) == want


def test_prefix_needs_the_same_path_and_key():
    src = PREFIX.format(wrap="DDP(net)", saved="wrapped", into="net", extra="")
    assert _codes(src.replace('torch.load("ckpt.pt")', 'torch.load("pretrained.pt")'), {"FSD069"}) == []
    keyed = src.replace('torch.save(wrapped.state_dict(), "ckpt.pt")', 'torch.save({"model": wrapped.state_dict()}, "ckpt.pt")')
    assert _codes(keyed, {"FSD069"}) == []  # the whole dict is not the model's state dict
    assert _codes(keyed.replace('torch.load("ckpt.pt")', 'torch.load("ckpt.pt")["model"]'), {"FSD069"}) == [(9, "FSD069")]


EVERY = """
import torch
import torch.distributed as dist
def main(model, path):
    dist.init_process_group("gloo")
    {line}
main(None, "x.pt")
"""


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("torch.save(model.state_dict(), path)", [(6, "FSD070")]),
        ("model.save_pretrained(path)", [(6, "FSD070")]),
        ("tokenizer.save_pretrained(path)", []),
        ("model.save_pretrained(path, is_main_process=dist.get_rank() == 0)", []),
        ('torch.save(model.state_dict(), f"{path}.{dist.get_rank()}")', []),
        ("if dist.get_rank() == 0: torch.save(model.state_dict(), path)", []),
        ("torch.save(model.state_dict(), tempfile.mktemp())", []),
    ],
)
def test_every_rank_writes(line, want):
    assert _codes(EVERY.format(line=line)) == want


def test_every_rank_writes_needs_distributed_work_and_a_caller():
    src = EVERY.format(line="torch.save(model.state_dict(), path)")
    assert _codes(src.replace('dist.init_process_group("gloo")', "pass")) == []  # a single-process script
    assert _codes(src.replace('main(None, "x.pt")', "")) == []  # never called here: the caller may guard it
    guarded = src.replace('main(None, "x.pt")', 'if dist.get_rank() == 0:\n    main(None, "x.pt")')
    assert _codes(guarded) == []


LOAD = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
def main(path):
    net = torch.nn.Linear(2, 2)
    {before}
    if dist.get_rank() == 0:
        net.load_state_dict(torch.load(path))
    {after}
"""


@pytest.mark.parametrize(
    ("before", "after", "want"),
    [
        ("ddp = DDP(net)", "pass", [(9, "FSD071")]),
        ("pass", "ddp = DDP(net)", []),  # DDP's constructor broadcasts rank 0's weights
        ("ddp = DDP(net)", "[dist.broadcast(p.data, 0) for p in net.parameters()]", []),
    ],
)
def test_load_before_or_after_the_wrap(before, after, want):
    assert _codes(LOAD.format(before=before, after=after)) == want


def test_fsdp1_load_on_one_rank_and_an_optimizer_before_the_wrap():
    fsdp = LOAD.format(before="m = FSDP(net)", after="pass").replace("net.load_state_dict", "m.load_state_dict")
    fsdp = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n" + fsdp
    assert _codes(fsdp) == [(10, "FSD071")]
    opt = LOAD.format(before="opt = torch.optim.SGD(net.parameters(), lr=0.1)", after="ddp = DDP(net)")
    assert _codes(opt.replace("net.load_state_dict", "opt.load_state_dict")) == [(9, "FSD071")]


def test_fsdp1_optimizer_needs_fsdp1_and_no_conversion():
    src = (
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "model = FSDP(torch.nn.Linear(2, 2))\nopt = torch.optim.Adam(model.parameters())\n"
        'opt.load_state_dict(torch.load("o.pt"))\n'
    )
    assert _codes(src) == [(5, "FSD072")]
    assert _codes(src.replace("FSDP(torch", "(torch")) == []
    assert _codes(src + "FSDP.optim_state_dict_to_load(model, opt, {})\n") == []


def _package(root: Path, wrap_first: bool) -> None:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ckpt.py").write_text(
        "import torch\nimport torch.distributed as dist\n\n\ndef resume(model, path):\n"
        "    if dist.get_rank() == 0:\n        model.load_state_dict(torch.load(path, map_location='cpu'))\n"
    )
    body = "    ddp = DDP(net)\n    resume(ddp, path)\n" if wrap_first else "    resume(net, path)\n    ddp = DDP(net)\n"
    (pkg / "train.py").write_text(
        "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from .ckpt import resume\n\n\ndef main(path):\n    dist.init_process_group('gloo')\n"
        f"    net = torch.nn.Linear(2, 2)\n{body}"
    )


@pytest.mark.parametrize(("wrap_first", "want"), [(True, {("ckpt.py", 7, "FSD071")}), (False, set())])
def test_a_resume_helper_of_another_file_given_the_wrapper(tmp_path, wrap_first, want):
    _package(tmp_path, wrap_first)
    found = {(Path(f.path).name, f.line, f.code) for f in check_paths([str(tmp_path)]) if f.code in CODES}
    assert found == want


def _helpers_package(root: Path, saved: str) -> None:
    """A package whose save and load helpers live in ``utils.py`` and are called from ``train.py``."""
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(
        "import torch\n\n\ndef save_checkpoint(model, optimizer, path):\n"
        "    torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, path)\n\n\n"
        "def load_checkpoint(model, path):\n    ckpt = torch.load(path, map_location='cpu')\n"
        "    model.load_state_dict(ckpt['model'])\n"
    )
    (pkg / "train.py").write_text(
        "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from .utils import load_checkpoint, save_checkpoint\n\n\ndef main(path, resume):\n"
        "    dist.init_process_group('gloo')\n    net = torch.nn.Linear(2, 2)\n"
        "    if resume:\n        load_checkpoint(net, path)\n    ddp = DDP(net)\n"
        "    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n"
        f"    if dist.get_rank() == 0:\n        save_checkpoint({saved}, opt, path)\n"
    )


@pytest.mark.parametrize(("saved", "want"), [("ddp", {("train.py", 11, "FSD069")}), ("ddp.module", set())])
def test_the_save_and_load_helpers_of_another_file(tmp_path, saved, want):
    """The wrapper handed to another file's save helper, the bare model to its load helper: found at the load call."""
    _helpers_package(tmp_path, saved)
    found = {(Path(f.path).name, f.line, f.code) for f in check_paths([str(tmp_path)]) if f.code in CODES}
    assert found == want


@pytest.mark.parametrize(
    "guard",
    [
        "    if args.save_logs:\n        torch.save(model.state_dict(), path)\n",
        "    world_size, rank = setup()\n    if rank == 0:\n        torch.save(model.state_dict(), path)\n",
        "    if dist.get_world_size() > 1:\n        raise RuntimeError('run this on one process')\n    torch.save(model.state_dict(), path)\n",
        "    assert world_size == 1\n    torch.save(model.state_dict(), path)\n",
    ],
)
def test_fsd070_is_silent_where_a_condition_may_guard_the_ranks(guard):
    """FSD070 speaks only where no condition around the write could tell the ranks apart: a save under a flag set from
    the main process, under a rank the facts cannot trace (a tuple from a helper), or after an early exit unless the
    job has one process is not 'every rank writes'. A rank-free condition (a better score) does not silence it."""
    head = (
        "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"
        "def save(model, path, args, world_size):\n"
    )
    tail = (
        "\n\ndef main(args):\n    dist.init_process_group('gloo')\n    model = DDP(torch.nn.Linear(2, 2))\n"
        "    save(model, 'ckpt.pt', args, 2)\n\n\nif __name__ == '__main__':\n    main(None)\n"
    )
    assert [f.code for f in check_source(head + guard + tail) if f.code == "FSD070"] == []
    scored = "    if args.score > args.best:\n        torch.save(model.state_dict(), path)\n"
    assert [f.code for f in check_source(head + scored + tail) if f.code == "FSD070"] == ["FSD070"]


UNSHARDED = """import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

def load_unsharded(model, path):
    if dist.get_rank() != 0:
        return
    {guard}
    model.load_state_dict(torch.load(path, map_location="cpu"))

def main(path):
    model = FSDP(torch.nn.Linear(2, 2))
    load_unsharded(model, path)
"""


@pytest.mark.parametrize(
    ("guard", "want"),
    [
        ("pass", [(9, "FSD071")]),
        ('if is_model_fsdp(model):\n        raise ValueError("pass a model not wrapped with FSDP")', []),  # composer's
        ("assert not isinstance(model, FSDP)", []),
        ("if not is_model_fsdp(model):\n        raise ValueError('wrap it first')", [(10, "FSD071")]),
        ("if is_model_fsdp(model):\n        print('sharded')", [(10, "FSD071")]),
    ],
)
def test_fsd071_a_load_after_the_function_refuses_an_fsdp_module_never_meets_one(guard, want):
    assert _codes(UNSHARDED.format(guard=guard)) == want


_INTO_WRAPPER = """import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def run(net, args):
    model = DDP(net)
    model.load_state_dict(torch.load({path}))
{save}
"""


@pytest.mark.parametrize(
    ("path", "save", "want"),
    [
        ("args.pretrained", "", [7]),  # pretrained weights: a bare model's keys
        ("args.resume", "", []),  # where the file came from is not shown
        ("args.resume", "    torch.save(model.module.state_dict(), args.out)", [7]),  # the file's own saves are bare
        ("args.resume", "    torch.save(model.state_dict(), args.out)", []),  # saved from the wrapper: keys match
        ("args.pretrained", "    torch.save(model.state_dict(), args.out)", []),
    ],
)
def test_load_into_the_wrapper_of_an_unmatched_file(path, save, want):
    src = _INTO_WRAPPER.format(path=path, save=save)
    assert [f.line for f in check_source(src, "t.py") if f.code == "FSD069"] == want


def test_prefix_handled_anywhere_silences_the_load_into_the_wrapper():
    src = _INTO_WRAPPER.format(path="args.pretrained", save='    print("module.")')
    assert [f for f in check_source(src, "t.py") if f.code == "FSD069"] == []
