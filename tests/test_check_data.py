"""FSD061-FSD068 (``skill/core/check/data_rules.py``): the marked fixtures of ``tests/data/check/data/`` are checked in
``tests/test_check_marked.py``; this file holds the edges and the shape across two files of a package."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsdp_skill.core.check import check_paths, check_source


def _codes(code: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source(code, "t.py") if f.code >= "FSD061"]


LOOP = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
def main(net, dataset, rank, world_size):
    model = DDP(net)
    loader = DataLoader({args})
    for x in loader:
        model(x).sum().backward()
"""


@pytest.mark.parametrize(
    ("args", "want"),
    [
        # reported at the DataLoader (line 7: where the sampler goes), the loop at line 8 named in the message
        ("dataset, batch_size=8, shuffle=True", [(7, "FSD061")]),
        ("dataset, 8, True", [(7, "FSD061")]),
        ("dataset, batch_size=8, sampler=None", [(7, "FSD061")]),  # written out, still none
        ("dataset, batch_size=8, sampler=DistributedSampler(dataset)", []),
        ("dataset, 8, False, DistributedSampler(dataset)", []),  # the sampler by position
        ("dataset, batch_sampler=my_batches", []),  # a batch sampler of the user's: the file cannot tell
        ("dataset, **loader_kwargs", []),  # the sampler may be in the kwargs
        # split by rank: FSD061 silent; FSD079 says the parts can differ in size (one more backward on some ranks)
        ("dataset[rank::world_size], batch_size=8", [(8, "FSD079")]),
    ],
)
def test_a_training_loop_over_a_loader_without_a_sampler(args, want):
    assert _codes(LOOP.format(args=args)) == want


def test_no_wrapper_no_backward_and_lightning_are_silent():
    plain = LOOP.replace("model = DDP(net)", "model = net")
    assert _codes(plain.format(args="dataset, batch_size=8")) == []  # one process: nothing to shard
    no_backward = LOOP.replace("model(x).sum().backward()", "model(x)")
    assert _codes(no_backward.format(args="dataset, batch_size=8")) == []  # evaluation
    lightning = "import lightning.pytorch as pl\n" + LOOP
    assert _codes(lightning.format(args="dataset, batch_size=8")) == []  # the Trainer injects the sampler


def test_a_package_whose_loader_helper_lives_in_another_file(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "data.py").write_text(
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "def build_loader(ds):\n    return DataLoader(ds, batch_size=8, shuffle=True)\n"
        "def build_sharded(ds):\n    return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))\n"
    )
    (tmp_path / "train.py").write_text(
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from pkg.data import build_loader, build_sharded\n"
        "def main(net, ds):\n    model = DDP(net)\n"
        "    for x in build_loader(ds):\n        model(x).sum().backward()\n"
        "    for x in build_sharded(ds):\n        model(x).sum().backward()\n"
    )
    found = [(f.path.rsplit("/", 1)[-1], f.line, f.code) for f in check_paths([str(tmp_path)]) if f.code >= "FSD061"]
    assert found == [("train.py", 5, "FSD061")]


@pytest.mark.parametrize(
    ("sampler", "want"),
    [
        ("DistributedSampler(ds, rank=local_rank)", [(6, "FSD063")]),
        ("DistributedSampler(ds, num_replicas=torch.cuda.device_count())", [(6, "FSD063")]),
        ("DistributedSampler(ds, num_replicas=torch.cuda.device_count(), rank=local_rank)", []),  # a per-node split
        ("DistributedSampler(ds, num_replicas=world_size, rank=rank)", []),
        ("DistributedSampler(ds)", []),
    ],
)
def test_the_samplers_view_of_the_job(sampler, want):
    code = (
        "import os\nimport torch\nfrom torch.utils.data import DistributedSampler\n"
        'local_rank = int(os.environ["LOCAL_RANK"])\nrank = int(os.environ["RANK"])\n'
        f"s = {sampler}\n"
    )
    assert _codes(code) == want


@pytest.mark.parametrize(
    ("sampler", "shuffle", "want"),
    [
        ("DistributedSampler(ds)", "True", [(4, "FSD062")]),
        ("DistributedSampler(ds) if distributed else None", "True", [(4, "FSD062")]),  # raises when distributed
        ("DistributedSampler(ds)", "False", []),
        ("None", "True", []),
        ("DistributedSampler(ds)", "sampler is None", []),  # shuffle decided on the sampler: the file cannot tell
    ],
)
def test_a_distributed_sampler_beside_shuffle(sampler, shuffle, want):
    code = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        f"sampler = {sampler}\n"
        "x = 1\n"
        "loader = DataLoader(ds, batch_size=4, sampler=sampler, shuffle=" + shuffle + ")\n"
    )
    assert _codes(code) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("loss.item()", [(4, "FSD064")]),
        ("[loss.item(), len(batch)]", [(4, "FSD064")]),
        ("3", [(4, "FSD064")]),
        ("loss.detach()", []),
        ("loss.float()", []),  # a tensor method, not the builtin
        ("torch.tensor([loss.item()])", []),
        ("sum(l.item() for l in losses)", [(4, "FSD064")]),
        ("sum(g.norm() ** 2 for g in grads)", []),  # the builtin sum of tensors is a tensor (EVA-CLIP's fp16 utils)
        ("round(loss)", []),  # of a tensor: a tensor
    ],
)
def test_a_collective_needs_a_tensor(value, want):
    code = f"import torch\nimport torch.distributed as dist\nv = {value}\ndist.all_reduce(v)\n"
    assert [c for c in _codes(code) if c[1] == "FSD064"] == want


@pytest.mark.parametrize(
    ("body", "want"),
    [
        ('dist.all_reduce(loss)\n    print(f"avg loss {loss.item()}")', [(4, "FSD065")]),
        ('dist.all_reduce(loss)\n    print(f"loss {loss.item()}")', []),  # not called an average
        ('dist.all_reduce(loss)\n    print(f"avg loss {loss.item() / dist.get_world_size()}")', []),
        ('loss = loss / dist.get_world_size()\n    dist.all_reduce(loss)\n    print(f"avg loss {loss.item()}")', []),
        ('dist.all_reduce(loss, op=dist.ReduceOp.AVG)\n    print(f"avg loss {loss.item()}")', []),
        ('dist.all_reduce(loss)\n    print(f"avg time {t:.2f}, loss sum {loss.item()}")', []),  # the label is another value's
    ],
)
def test_a_sum_reported_as_an_average(body, want):
    code = f"import torch.distributed as dist\ndef report(loss, t):\n    x = 1\n    {body}\n"
    assert _codes(code) == want


def test_the_step_through_model_module_is_silent_when_the_file_reduces_gradients_itself():
    code = (
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def step(net, x):\n    model = DDP(net)\n    loss = model.module(x).sum()\n    loss.backward()\n"
        "    for p in model.module.parameters():\n        dist.all_reduce(p.grad)\n"
    )
    assert [c for c in _codes(code) if c[1] == "FSD068"] == []
    assert _codes(code.rsplit("    for p", 1)[0]) == [(5, "FSD068")]


def test_fsd061_is_silent_in_a_test_module_that_feeds_every_rank_the_same_batches(tmp_path):
    """A parity test gives every rank the same data on purpose (to compare a sharded run with one process): FSD061 is
    silent in files named like tests (test_*.py, *_test.py, *_test_utils.py, conftest.py), and speaks elsewhere."""
    from fsdp_skill.core.check import check_paths
    from fsdp_skill.core.check.engine import is_test_file

    code = (Path(__file__).parent / "data" / "check" / "FSD061_bad.py").read_text()
    for name in ("test_parity.py", "parity_test.py", "shampoo_test_utils.py", "conftest.py"):
        assert is_test_file(f"pkg/tests/{name}")
        (tmp_path / name).write_text(code)
    (tmp_path / "train.py").write_text(code)
    found = check_paths([str(tmp_path)])
    assert {Path(f.path).name for f in found if f.code == "FSD061"} == {"train.py"}
    assert not is_test_file("tests/data/check/FSD061_bad.py") and not is_test_file("contest.py")


SPAWN = """
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
def worker(local_rank, world_size, args):
    dist.init_process_group("nccl", rank={rank}, world_size=world_size)
def main(args):
    world_size = {world}
    mp.spawn(worker, args=(world_size, args), nprocs={nprocs})
"""


@pytest.mark.parametrize(
    ("rank", "world", "nprocs", "want"),
    [
        # mp.spawn on one machine, no node named anywhere: every rank of the job is a process of this machine
        ("local_rank", "torch.cuda.device_count()", "world_size", []),
        ("local_rank", "args.world_size", "args.world_size", []),
        # a job laid out over nodes (ImageNet example's shape) that forgets the node's offset
        ("local_rank", "args.gpus * args.nnodes", "args.gpus", [(7, "FSD073")]),
        ("args.node_rank * args.gpus + local_rank", "args.gpus * args.nnodes", "args.gpus", []),
        ('int(os.environ["LOCAL_RANK"])', "args.gpus * args.nnodes", "args.gpus", [(7, "FSD073")]),
        ('int(os.environ["RANK"])', "args.gpus * args.nnodes", "args.gpus", []),
    ],
)
def test_init_process_group_given_the_rank_on_the_node(rank, world, nprocs, want):
    assert _codes(SPAWN.format(rank=rank, world=world, nprocs=nprocs)) == want


def test_init_on_the_local_rank_under_torchrun():
    code = (
        "import os\nimport torch.distributed as dist\n"
        "local_rank = int(os.environ['LOCAL_RANK'])\n"
        "dist.init_process_group('nccl', rank=local_rank, world_size=int(os.environ['WORLD_SIZE']))\n"
    )
    assert _codes(code) == [(4, "FSD073")]
    assert _codes(code.replace("world_size=int(os.environ['WORLD_SIZE'])", "world_size=1")) == []  # one process
    attr = (
        "import torch.distributed as dist\n"
        "def main(args):\n"
        "    args.local_rank = args.node_rank * args.ngpus + args.gpu\n"
        "    dist.init_process_group('nccl', rank=args.local_rank, world_size=args.world_size)\n"
    )
    assert _codes(attr) == []  # the attribute was given the global rank


HELPER = """
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
def train(net, x, opt):
    {body}
def main(net, x):
    model = FSDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    {bind}
    {call}
"""


@pytest.mark.parametrize(
    ("body", "bind", "call", "fires"),
    [
        ("net(x).sum().backward()", "inner = model.module", "train(inner, x, opt)", True),
        (
            "net(x).sum().backward()",
            'inner = model if not hasattr(model, "module") else model.module',
            "train(inner, x, opt)",
            True,
        ),
        ("net(x).sum().backward()", "pass", "train(model.module, x, opt)", True),
        ("net(x).sum().backward()", "pass", "train(net=model.module, x=x, opt=opt)", True),
        ("net(x).sum().backward()", "inner = model.module", "train(model, x, opt)", False),  # the wrapper trains
        ("net(x).sum().backward()", "with torch.no_grad():", "    train(model.module, x, opt)", False),
        ("print(net(x).sum())", "inner = model.module", "train(inner, x, opt)", False),  # no backward
        ("net = net.float(); net(x).sum().backward()", "inner = model.module", "train(inner, x, opt)", False),  # rebound
        ("net(x).sum().backward()", "inner = net", "train(inner.module, x, opt)", False),  # not a wrapper
    ],
)
def test_fsd068_follows_the_inner_module_into_a_training_helper(body, bind, call, fires):
    code = HELPER.format(body=body, bind=bind, call=call)
    assert [c for c in _codes(code) if c[1] == "FSD068"] == ([(10, "FSD068")] if fires else [])


def test_fsd061_points_at_the_loader_once_and_names_the_loop():
    """The DataLoader is built once in a helper and read by two training loops: one finding, at the DataLoader(...)
    (where sampler= goes), naming the first loop; a loop over a parameter names its function and the call."""
    code = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from torch.utils.data import DataLoader\n"
        "def build(ds):\n"
        "    return DataLoader(ds, batch_size=8, shuffle=True)\n"
        "def fit(model, loader):\n"
        "    for x in loader:\n"
        "        model(x).sum().backward()\n"
        "def main(net, ds):\n"
        "    model = DDP(net)\n"
        "    loader = build(ds)\n"
        "    for x in loader:\n"
        "        model(x).sum().backward()\n"
        "    for x in loader:\n"
        "        model(x).sum().backward()\n"
        "    fit(model, build(ds))\n"
    )
    found = [f for f in check_source(code, "t.py") if f.code == "FSD061"]
    assert [(f.line, f.col) for f in found] == [(4, 12)]
    assert found[0].message.startswith("fit() trains on this DataLoader (passed at line 15) in its loop at line 6")


def test_a_parameter_named_local_rank_is_what_its_callers_pass():
    """``make_loader(ds, local_rank)`` called in the file with ``accelerator.process_index`` (the global rank; a
    public VLM's data helpers) gives the sampler the global rank: no FSD063; a helper nobody in the file calls keeps
    its name's word."""
    head = "from torch.utils.data import DistributedSampler\nfrom accelerate import Accelerator\n\n\n"
    helper = "def make_loader(ds, local_rank):\n    return DistributedSampler(ds, rank=local_rank, num_replicas=8)\n"
    called = head + helper + "\n\ndef main(ds):\n    a = Accelerator()\n    return make_loader(ds, a.process_index)\n"
    assert [c for c in _codes(called) if c[1] == "FSD063"] == []
    assert [c for c in _codes(head + helper) if c[1] == "FSD063"] == [(6, "FSD063")]
