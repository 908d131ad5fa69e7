"""FSD074-FSD076 (``skill/core/check/setup_rules.py``): the marked fixtures of ``tests/data/check/setup/`` are checked
in ``tests/test_check_marked.py``; this file holds the edges: which files FSD074 judges, what a device value is,
how FSD075 reads ``sync_module_states`` and the other ranks' path, and what counts as a move to the GPU."""

from __future__ import annotations

import pytest

from fsdp_skill.core.check import check_source

CODES = {"FSD013", "FSD074", "FSD075", "FSD076", "FSD084", "FSD085"}


def _codes(code: str, only: set[str] = CODES) -> list[tuple[int, str]]:
    return sorted((f.line, f.code) for f in check_source(code, "t.py") if f.code in only)


TORCHRUN = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group({backend})
{line}
"""


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ('model = DDP(torch.nn.Linear(2, 2).to("cuda:0"))', [(9, "FSD074")]),
        ('model = DDP(torch.nn.Linear(2, 2).to("cuda:1"))', [(9, "FSD074")]),
        ("model = DDP(torch.nn.Linear(2, 2).cuda(0))", [(9, "FSD074")]),
        ("model = DDP(torch.nn.Linear(2, 2).to(0))", []),  # an int given to .to() is too often not a device
        ('x = torch.zeros(1, device="cuda:0")', [(9, "FSD074")]),
        ('x = torch.zeros(1, device=torch.device("cuda", 0))', [(9, "FSD074")]),
        ("torch.cuda.set_device(0)", [(9, "FSD074")]),
        ("model = DDP(torch.nn.Linear(2, 2).cuda(), device_ids=[0], output_device=0)", [(9, "FSD074")]),
        ('dev = "cuda:0" if torch.cuda.is_available() else "cpu"\nx = torch.ones(1).to(dev)', [(9, "FSD074")]),
        # the device taken from the local rank, or bound first and then read as the plain "cuda"
        ('model = DDP(torch.nn.Linear(2, 2).to(f"cuda:{local_rank}"))', []),
        ('model = DDP(torch.nn.Linear(2, 2).to("cuda"))', []),
        ("model = DDP(torch.nn.Linear(2, 2).cuda())", []),
        ('x = torch.zeros(1, device="cpu")', []),
        ("x = build_model(device_id=0)", []),  # a helper of the script's own: its parameter may mean anything
        # a value only a one-process run takes, one alternative of which is computed, a rank-0-only device
        ('dev = "cuda:0" if args.world_size == 1 else f"cuda:{local_rank}"\nx = torch.ones(1).to(dev)', []),
        ('if not dist.is_initialized():\n    x = torch.ones(1).to("cuda:0")', []),
        ('if local_rank == 0:\n    x = torch.ones(1).to("cuda:0")', []),
        ('dev = "cuda:0"\nif args.distributed:\n    dev = f"cuda:{local_rank}"\nx = torch.ones(1).to(dev)', []),
    ],
)
def test_hard_coded_device_shapes(line, want):
    assert _codes(TORCHRUN.format(backend='"nccl"', line=line)) == want


def test_one_finding_where_the_device_is_written_however_often_it_is_used():
    src = TORCHRUN.format(
        backend='"nccl"', line='device = torch.device("cuda:0")\na = torch.ones(1).to(device)\nb = torch.ones(1).to(device)'
    )
    found = [f for f in check_source(src, "t.py") if f.code == "FSD074"]
    assert [(f.line, f.col) for f in found] == [(9, 23)] and "used at line 10" in found[0].message


@pytest.mark.parametrize(
    ("setup", "fires"),
    [
        ('dist.init_process_group("nccl")', True),
        ("dist.init_process_group()", True),  # the default backend on a CUDA build is NCCL
        # every group is Gloo: processes sharing a GPU are slow there, not wrong
        ('dist.init_process_group("gloo")', False),
        # each process sees one GPU, which is then its GPU 0
        ('os.environ["CUDA_VISIBLE_DEVICES"] = os.environ["LOCAL_RANK"]\ndist.init_process_group("nccl")', False),
        ('os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"\ndist.init_process_group("nccl")', True),
        # a one-process group
        ('dist.init_process_group("nccl", rank=0, world_size=1)', False),
    ],
)
def test_files_fsd074_judges(setup, fires):
    src = f"import os\nimport torch\nimport torch.distributed as dist\n{setup}\nmodel = torch.nn.Linear(2, 2).cuda(0)\n"
    src += 'local_rank = int(os.environ["LOCAL_RANK"])\n'
    line = src.splitlines().index("model = torch.nn.Linear(2, 2).cuda(0)") + 1
    assert _codes(src, {"FSD074"}) == ([(line, "FSD074")] if fires else [])


def test_a_file_that_shows_no_process_per_gpu_is_not_judged():
    src = 'import torch\nimport torch.distributed as dist\ndist.init_process_group("nccl")\nx = torch.ones(1).to("cuda:0")\n'
    assert _codes(src) == []  # srun with one GPU per task makes cuda:0 right: the file cannot tell
    assert _codes(src + "n = torch.cuda.device_count()\n") == [(4, "FSD074")]


SPAWNED = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
def worker(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
{bind}    model = DDP(torch.nn.Linear(2, 2).to(rank), device_ids=[rank])
    total = torch.zeros(1).cuda()
    dist.all_reduce(total)
if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
"""


@pytest.mark.parametrize(
    ("bind", "want"),
    [
        ("", [(9, "FSD074")]),  # the bare .cuda() is GPU 0 on every rank: no set_device binds the rank's GPU
        ("    torch.cuda.set_device(rank)\n", []),
    ],
)
def test_a_bare_cuda_only_where_no_device_is_bound(bind, want):
    assert _codes(SPAWNED.format(bind=bind)) == [(line + bool(bind), code) for line, code in want]


def test_a_bare_cuda_is_fsd013s_where_fsd013_speaks():
    src = (
        'import os\nimport torch\nimport torch.distributed as dist\nlocal_rank = int(os.environ["LOCAL_RANK"])\n'
        'def main():\n    dist.init_process_group("nccl")\n    x = torch.ones(1).cuda()\n'
        'if __name__ == "__main__":\n    main()\n'
    )
    assert _codes(src) == [(6, "FSD013")]


FSDP1_LOAD = """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
rank = dist.get_rank()
model = torch.nn.Linear(2, 2)
{load}
model = FSDP(model{extra})
"""


@pytest.mark.parametrize(
    ("load", "extra", "want"),
    [
        ('if rank == 0:\n    model.load_state_dict(torch.load("p.pt"))', "", [(9, "FSD075")]),
        ('if rank == 0:\n    model.load_state_dict(torch.load("p.pt"))', ", sync_module_states=False", [(9, "FSD075")]),
        ('if rank == 0:\n    model.load_state_dict(torch.load("p.pt"))', ", sync_module_states=True", []),
        ('if rank == 0:\n    model.load_state_dict(torch.load("p.pt"))', ", sync_module_states=args.sync", []),
        ('if rank == 0:\n    model.load_state_dict(torch.load("p.pt"))', ", **fsdp_kwargs", []),
        # every rank loads: on its own path, or with no condition at all
        (
            'if rank == 0:\n    model.load_state_dict(torch.load("a.pt"))\nelse:\n    model.load_state_dict(torch.load("b.pt"))',
            "",
            [],
        ),
        ('model.load_state_dict(torch.load("p.pt"))', "", []),
        # the ranks load in turn, each once
        ('for i in range(dist.get_world_size()):\n    if i == rank:\n        model.load_state_dict(torch.load("p.pt"))', "", []),
        # "not launched distributed" (-1) is no rank of the job
        ('if rank == -1:\n    model.load_state_dict(torch.load("p.pt"))', "", []),
    ],
)
def test_fsdp1_load_on_some_ranks(load, extra, want):
    src = FSDP1_LOAD.format(load=load, extra=extra)
    assert _codes(src, {"FSD075"}) == [(src.splitlines().index(f"model = FSDP(model{extra})") + 1, c) for _, c in want]


def test_a_load_into_the_module_after_the_wrap_on_every_rank_settles_it():
    src = FSDP1_LOAD.format(load='if rank == 0:\n    model.load_state_dict(torch.load("p.pt"))', extra="")
    with_load = src + 'with FSDP.state_dict_type(model, "full"):\n    model.load_state_dict(torch.load("p.pt"))\n'
    assert _codes(src, {"FSD075"}) == [(9, "FSD075")] and _codes(with_load, {"FSD075"}) == []


def test_ddp_broadcasts_so_a_rank0_load_before_it_is_fine():
    src = FSDP1_LOAD.format(load='if rank == 0:\n    model.load_state_dict(torch.load("p.pt"))', extra="")
    ddp = src.replace("FullyShardedDataParallel as FSDP", "FullyShardedDataParallel").replace(
        "FSDP(model)", "torch.nn.parallel.DistributedDataParallel(model)"
    )
    assert _codes(ddp) == []


OFFLOAD = """
import torch
from torch.distributed.fsdp import CPUOffload
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
device = {device}
model = torch.nn.Linear(2, 2)
model = model.to(device)
model = FSDP(model, cpu_offload=CPUOffload(offload_params={offload}))
"""


@pytest.mark.parametrize(
    ("device", "offload", "want"),
    [
        ('torch.device("cuda", 1)', "True", [(7, "FSD076")]),
        ('"cuda"', "True", [(7, "FSD076")]),
        ("torch.cuda.current_device()", "True", [(7, "FSD076")]),
        ('f"cuda:{local_rank}"', "True", [(7, "FSD076")]),
        ('"cpu"', "True", []),
        ("torch.bfloat16", "True", []),
        ('torch.device("cuda", 1)', "False", []),
    ],
)
def test_offloaded_module_moved_to_the_gpu(device, offload, want):
    assert _codes(OFFLOAD.format(device=device, offload=offload)) == want


@pytest.mark.parametrize(
    ("bound", "want"),
    [
        ("model = torch.nn.Linear(2, 2).to(device)", [(6, "FSD076")]),
        ("model = build(cfg).cuda()", [(6, "FSD076")]),
        ('model = torch.nn.Linear(2, 2).to("cpu")', []),
        ("model = torch.nn.Linear(2, 2).to(torch.bfloat16)", []),
    ],
)
def test_the_wrapped_name_bound_from_a_move_to_the_gpu(bound, want):
    src = OFFLOAD.format(device='torch.device("cuda", 1)', offload="True")
    src = src.replace("model = torch.nn.Linear(2, 2)\nmodel = model.to(device)\n", bound + "\n")
    assert _codes(src) == want


def test_a_move_in_the_other_branch_of_an_if_is_not_before_the_wrap():
    src = OFFLOAD.format(device='"cuda"', offload="True").replace(
        "model = model.to(device)\nmodel = FSDP(", "if gpu_only:\n    model = model.to(device)\nelse:\n    model = FSDP("
    )
    assert _codes(src) == []


SEEDED = """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy
rank = dist.get_rank()
{seed}
model = torch.nn.Linear(2, 2)
model = FSDP(model, {options})
"""


@pytest.mark.parametrize(
    ("seed", "options", "want"),
    [
        ("torch.manual_seed(0 + rank)", "sharding_strategy=ShardingStrategy.HYBRID_SHARD", [(7, "FSD084")]),
        ("torch.cuda.manual_seed_all(rank)", "sharding_strategy=ShardingStrategy._HYBRID_SHARD_ZERO2", [(7, "FSD084")]),
        ("seed = 17 + rank\ntorch.manual_seed(seed)", "sharding_strategy=ShardingStrategy.NO_SHARD", [(8, "FSD084")]),
        # the flag only for a resumed run leaves training from scratch unsynchronised
        (
            "torch.manual_seed(rank)",
            "sharding_strategy=ShardingStrategy.HYBRID_SHARD, sync_module_states=ckpt is not None",
            [(7, "FSD084")],
        ),
        # silent: a broadcast, a flag the caller sets, no replicas, one seed, numpy's or Python's generator
        ("torch.manual_seed(rank)", "sharding_strategy=ShardingStrategy.HYBRID_SHARD, sync_module_states=True", []),
        ("torch.manual_seed(rank)", "sharding_strategy=ShardingStrategy.HYBRID_SHARD, sync_module_states=args.sync", []),
        ("torch.manual_seed(rank)", "sharding_strategy=ShardingStrategy.FULL_SHARD", []),
        ("torch.manual_seed(rank)", "sharding_strategy=ShardingStrategy.HYBRID_SHARD, **kwargs", []),
        ("torch.manual_seed(1234)", "sharding_strategy=ShardingStrategy.HYBRID_SHARD", []),
        ("np.random.seed(rank)", "sharding_strategy=ShardingStrategy.HYBRID_SHARD", []),
        ("random.seed(rank)", "sharding_strategy=ShardingStrategy.HYBRID_SHARD", []),
        ("torch.manual_seed(rank)\ntorch.manual_seed(5)", "sharding_strategy=ShardingStrategy.HYBRID_SHARD", []),
        ("if rank == 0:\n    torch.manual_seed(rank)", "sharding_strategy=ShardingStrategy.HYBRID_SHARD", []),
    ],
)
def test_rank_seeded_weights_replicated_fsdp1(seed, options, want):
    src = "import random\nimport numpy as np\n" + SEEDED.format(seed=seed, options=options)
    assert _codes(src) == [(line + 2, code) for line, code in want]


def test_rank_seed_after_the_build_is_for_dropout_not_the_weights():
    src = SEEDED.format(seed="", options="sharding_strategy=ShardingStrategy.HYBRID_SHARD").replace(
        "model = FSDP(", "torch.manual_seed(rank)\nmodel = FSDP("
    )
    assert _codes(src) == []


def test_fully_shard_mesh_shapes():
    base = (
        "import torch\nimport torch.distributed as dist\nfrom torch.distributed.device_mesh import init_device_mesh\n"
        "from torch.distributed.fsdp import fully_shard\n"
        "torch.manual_seed(dist.get_rank())\nmodel = torch.nn.Linear(2, 2)\n"
    )
    two = base + 'mesh = init_device_mesh("cuda", (2, 4), mesh_dim_names=("replicate", "shard"))\nfully_shard(model, mesh=mesh)\n'
    tp = base + 'mesh = init_device_mesh("cuda", (2, 4), mesh_dim_names=("dp", "tp"))\nfully_shard(model, mesh=mesh["dp"])\n'
    one = base + 'mesh = init_device_mesh("cuda", (8,))\nfully_shard(model, mesh=mesh)\n'
    unnamed = base + 'fully_shard(model, mesh=init_device_mesh("cuda", (2, 4)))\n'
    assert _codes(two) == [(5, "FSD084")]
    assert _codes(unnamed) == [(5, "FSD084")]
    assert _codes(tp) == [] and _codes(one) == []


OPTION = """
import argparse
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
p = argparse.ArgumentParser()
p.add_argument("--device", default={default})
args = p.parse_args()
local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl")
{extra}
device = torch.device(args.device)
torch.cuda.set_device(device)
model = DDP(torch.nn.Linear(2, 2).to(device), device_ids=[device.index])
"""


@pytest.mark.parametrize(
    ("default", "extra", "want"),
    [
        ('"cuda:0"', "", [(13, "FSD074")]),  # every rank gets the same command line: all on GPU 0
        ('"cuda:1"', "", [(13, "FSD074")]),
        # silent: a plain "cuda", the program sets the option itself, or also picks the device from the local rank
        ('"cuda"', "", []),
        ('"cuda:0"', 'args.device = f"cuda:{local_rank}"', []),
        ('"cuda:0"', "torch.cuda.set_device(local_rank)", []),
        ('"cpu"', "", []),
    ],
)
def test_an_option_whose_default_is_one_gpu(default, extra, want):
    assert _codes(OPTION.format(default=default, extra=extra)) == want


def test_a_tensors_device_attribute_is_not_the_option():
    src = OPTION.format(default='"cuda:0"', extra="x = torch.ones(1)").replace(
        "device = torch.device(args.device)", "device = torch.device(x.device)"
    )
    assert _codes(src) == []


DDP_CPU = """
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
def main(local_rank):
    model = nn.Linear(2, 2)
    {between}
    return DDP(model, device_ids={ids})
"""


@pytest.mark.parametrize(
    ("between", "ids", "want"),
    [
        ("pass", "[local_rank]", [(8, "FSD085")]),
        ("pass", "(0,)", [(8, "FSD085")]),
        ("ids = 1", "[local_rank]", [(8, "FSD085")]),
        # silent: moved (in place or rebound), handed to a function, ids chosen at run time or absent
        ("model.to(local_rank)", "[local_rank]", []),
        ("model = model.cuda()", "[local_rank]", []),
        ("init_weights(model)", "[local_rank]", []),
        ("pass", "[local_rank] if torch.cuda.is_available() else None", []),
        ("pass", "None", []),
        ("pass", "ids", []),
        ('torch.set_default_device("cuda")', "[local_rank]", []),
    ],
)
def test_ddp_device_ids_for_a_cpu_module(between, ids, want):
    assert _codes(DDP_CPU.format(between=between, ids=ids)) == want
