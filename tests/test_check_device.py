"""FSD047-FSD053 (``skill/core/check/device_rules.py``): each fires where the fixtures of
``tests/data/check/device/`` mark it (``# <- FSDxxx``), in the shapes real code takes (a Trainer class with a
reducing helper, a nanoGPT-style script, an accelerate/HF fine-tuning script, an HF Trainer script), and nowhere
else; then the edges each rule stays silent on, and FSD050 taking FSD027's place. The marked fixtures are checked in ``tests/test_check_marked.py``; this file holds the edges."""

from __future__ import annotations

import pytest

from fsdp_skill.core.check import check_source


def _codes(code: str, rule: str) -> list[int]:
    return [f.line for f in check_source(code, "t.py") if f.code == rule]


NCCL = """
import torch
import torch.distributed as dist
dist.init_process_group({backend})
def report(x):
    t = {build}
    dist.all_reduce(t)
"""


@pytest.mark.parametrize(
    "backend, build, fires",
    [
        ('"nccl"', "torch.tensor([x.item(), 1.0])", True),
        ('backend="nccl"', "torch.ones(2)", True),
        ('"nccl"', "x.detach().cpu()", True),
        ('"nccl"', "torch.tensor([x.item()], device='cuda')", False),  # built on the GPU
        ('"nccl"', "torch.tensor([x.item()]).cuda()", False),  # moved before the call
        ('"nccl"', "torch.tensor(x)", False),  # a tensor's copy keeps that tensor's device
        ('"nccl"', "torch.zeros_like(x)", False),  # x's device
        ('"cpu:gloo,cuda:nccl"', "torch.ones(2)", False),  # the CPU tensor goes to Gloo
        ('"gloo"', "torch.ones(2)", False),
        ('"nccl" if torch.cuda.is_available() else "gloo"', "torch.ones(2)", False),  # chosen at run time
        ("args.backend", "torch.ones(2)", False),  # unknown
    ],
)
def test_fsd047_only_on_an_nccl_only_group_and_a_surely_cpu_tensor(backend, build, fires):
    assert _codes(NCCL.format(backend=backend, build=build), "FSD047") == ([7] if fires else [])


def test_fsd047_silent_with_a_default_device_or_a_gloo_group_passed():
    base = NCCL.format(backend='"nccl"', build="torch.ones(2)")
    assert _codes(base.replace("dist.init", 'torch.set_default_device("cuda")\ndist.init'), "FSD047") == []
    assert _codes(base.replace("dist.all_reduce(t)", "dist.all_reduce(t, group=cpu_group)"), "FSD047") == []
    in_ctx = base.replace("    t = torch.ones(2)", '    with torch.device("cuda"):\n        t = torch.ones(2)')
    assert _codes(in_ctx, "FSD047") == []
    # the group is formed in another file: the backend is unknown here
    assert _codes(base.replace('dist.init_process_group("nccl")', ""), "FSD047") == []


def test_fsd047_follows_a_helper_that_sends_its_parameter():
    code = NCCL.format(backend='"nccl"', build="x") + "report(torch.tensor([1.0, 2.0]))\nreport(torch.ones(2).cuda())\n"
    assert _codes(code, "FSD047") == [8]


ARGPARSE = """
import argparse
import torch
import torch.distributed as dist
parser = argparse.ArgumentParser()
parser.add_argument({option})
args = parser.parse_args()
{extra}
dist.init_process_group(backend=args.{attr})
def report(x):
    t = torch.FloatTensor([x, 1.0])
    dist.all_reduce(t)
"""


@pytest.mark.parametrize(
    ("option", "attr", "extra", "fires"),
    [
        ('"--dist-backend", default="nccl"', "dist_backend", "", True),
        ('"--backend", type=str, default="nccl"', "backend", "", True),
        ('"-b", "--dist_backend", default="nccl"', "dist_backend", "", True),
        ('"--ddp-backend", dest="backend", default="nccl"', "backend", "", True),
        ('"--dist-backend", default="gloo"', "dist_backend", "", False),  # the default run is Gloo
        ('"--dist-backend", default="nccl"', "backend", "", False),  # another option: the backend is unknown
        ('"--dist-backend"', "dist_backend", "", False),  # no default: given on the command line
        ('"--dist-backend", default="nccl"', "dist_backend", 'args.dist_backend = "gloo"', False),  # set by the program
        ('"--dist-backend", default="nccl"', "dist_backend", 'parser.set_defaults(dist_backend="gloo")', False),
    ],
)
def test_fsd047_reads_the_default_of_an_argparse_backend_option(option, attr, extra, fires):
    code = ARGPARSE.format(option=option, attr=attr, extra=extra)
    assert _codes(code, "FSD047") == ([12] if fires else [])


@pytest.mark.parametrize(
    ("build", "fires"),
    [
        ("torch.FloatTensor([x, 1.0])", True),
        ("torch.LongTensor(4)", True),
        ("torch.Tensor([x])", True),
        ("torch.cuda.FloatTensor([x, 1.0])", False),  # the CUDA constructor
        ("torch.FloatTensor([x, 1.0]).cuda()", False),  # moved
        ("torch.FloatTensor(*shape)", False),
    ],
)
def test_fsd047_knows_the_legacy_typed_constructors(build, fires):
    assert _codes(NCCL.format(backend='"nccl"', build=build), "FSD047") == ([7] if fires else [])


SAMPLER = """
import torch.distributed as dist
from torch.utils.data import DistributedSampler
rank = dist.get_rank()
sampler = DistributedSampler(ds, {args})
"""


@pytest.mark.parametrize(
    "args, fires",
    [
        ("seed=rank", True),
        ("seed=args.seed + rank", True),
        ("shuffle=True, seed=dist.get_rank()", True),
        ("seed=int(os.environ['LOCAL_RANK']) * 7", True),
        ("seed=args.seed", False),
        ("seed=42", False),
        ("", False),  # the default seed 0 on every rank
        ("shuffle=False, seed=rank", False),  # no permutation
        ("num_replicas=1, rank=0, seed=rank", False),  # one replica: not sharded
    ],
)
def test_fsd048_only_for_a_per_rank_seed_of_a_shuffling_sampler(args, fires):
    assert _codes(SAMPLER.format(args=args), "FSD048") == ([5] if fires else [])


WRAP = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModel
model = AutoModel.from_pretrained("m", device_map={dm})
model = DDP(model.to("cuda"))
"""


@pytest.mark.parametrize(
    "dm, fires",
    [
        ('"auto"', True),
        ('"balanced_low_0"', True),
        ('{"encoder": 0, "decoder": 1}', True),
        ('{"": local_rank}', False),  # the whole model on the rank's device
        ('{"encoder": 0, "decoder": 0}', False),  # one device
        ("device", False),
        ('"cuda:0"', False),
    ],
)
def test_fsd049_only_for_a_device_map_that_spreads_the_model(dm, fires):
    """Reported at the load's device_map= (what to change), not at the wrap a line below."""
    assert _codes(WRAP.format(dm=dm), "FSD049") == ([5] if fires else [])


def test_fsd049_silent_without_a_wrap():
    code = WRAP.format(dm='"auto"').replace('model = DDP(model.to("cuda"))', "out = model.generate()")
    assert _codes(code, "FSD049") == []


AC = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint
class Net(torch.nn.Module):
    def forward(self, x):
        return checkpoint(self.block, x{flag})
model = DDP(Net(){ddp})
"""


@pytest.mark.parametrize(
    "flag, ddp, codes",
    [
        ("", ", find_unused_parameters=True", ["FSD050"]),  # FSD050 wins: FSD027 is not reported there too
        (", use_reentrant=True", ", find_unused_parameters=True", ["FSD050"]),
        (", use_reentrant=False", ", find_unused_parameters=True", []),
        (", use_reentrant=cfg.reentrant", ", find_unused_parameters=True", []),  # unknown
        (", **kwargs", ", find_unused_parameters=True", []),
        ("", ", find_unused_parameters=True, static_graph=True", ["FSD027"]),  # static_graph supports reentrant
        ("", "", ["FSD027"]),  # no unused-parameter search: only the generic warning
    ],
)
def test_fsd050_reentrant_checkpoint_with_find_unused(flag, ddp, codes):
    found = [f.code for f in check_source(AC.format(flag=flag, ddp=ddp), "t.py") if f.code in ("FSD027", "FSD050")]
    assert found == codes


def test_fsd050_needs_the_checkpointed_class_or_model_to_be_the_wrapped_one():
    never_built = AC.format(flag="", ddp=", find_unused_parameters=True").replace("DDP(Net()", "DDP(Other()")
    assert [f.code for f in check_source(never_built, "t.py") if f.code in ("FSD027", "FSD050")] == ["FSD027"]
    other_model = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "a.gradient_checkpointing_enable()\n"
        "m = DDP(b, find_unused_parameters=True)\n"
    )
    assert _codes(other_model, "FSD050") == []
    assert _codes(other_model.replace("DDP(b", "DDP(a"), "FSD050") == [2]


EARLY = """
import os
import torch
import torch.distributed as dist
def main():
    dist.init_process_group({init})
    {sync}
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
"""


@pytest.mark.parametrize(
    "init, sync, fires",
    [
        ('"nccl"', "dist.barrier()", True),
        ('backend="nccl"', "dist.all_reduce(t)", True),
        ('"nccl"', "dist.barrier(device_ids=[0])", False),  # the device named
        ('"nccl"', "dist.barrier(group=g)", False),  # another group: of unknown backend
        ('"nccl", device_id=torch.device("cuda", 0)', "dist.barrier()", False),  # bound at init
        ('"gloo"', "dist.barrier()", False),
        ('"cpu:gloo,cuda:nccl"', "dist.barrier()", False),
        ('"nccl"', "print('no collective')", False),
    ],
)
def test_fsd051_a_collective_before_set_device(init, sync, fires):
    assert _codes(EARLY.format(init=init, sync=sync), "FSD051") == ([7] if fires else [])


def test_fsd051_set_device_missing_is_fsd013s_and_set_device_first_is_silent():
    missing = EARLY.format(init='"nccl"', sync="dist.barrier()").replace(
        '    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))\n', ""
    )
    assert _codes(missing + "if __name__ == '__main__':\n    main()\n", "FSD051") == []
    first = EARLY.format(init='"nccl"', sync="torch.cuda.set_device(0)\n    dist.barrier()")
    assert _codes(first, "FSD051") == []
    branches = EARLY.format(init='"nccl"', sync="dist.barrier()").replace(
        "    dist.barrier()\n    torch.cuda.set_device",
        "    if cpu:\n        dist.barrier()\n    else:\n        torch.cuda.set_device",
    )
    assert _codes(branches, "FSD051") == []  # never both on one path


LOAD = """
import torch
from torch.distributed.fsdp import fully_shard
def build(path, rank):
    model = torch.nn.Linear(4, 4)
    {first}
    {second}
"""


@pytest.mark.parametrize(
    "first, second, line",
    [
        ("fully_shard(model)", "model.load_state_dict(torch.load(path))", 7),
        ("fully_shard(model)", "model.load_state_dict(torch.load(path, weights_only=True)['model'])", 7),
        ("fully_shard(model)", "model.load_state_dict(safetensors.torch.load_file(path))", 7),
        ("model.load_state_dict(torch.load(path))", "fully_shard(model)", None),  # loaded before sharding
        ("fully_shard(model)", "model.load_state_dict(torch.load(f'shard_{rank}.pt'))", None),  # each rank's own file
        ("fully_shard(model)", "model.load_state_dict(sd)", None),  # a state dict of unknown origin
        ("fully_shard(model.layer)", "model.load_state_dict(torch.load(path))", None),  # the root is not sharded
    ],
)
def test_fsd053_full_state_dict_after_fully_shard(first, second, line):
    code = LOAD.format(first=first, second=second).replace("import torch\n", "import torch\nimport safetensors.torch\n")
    assert _codes(code, "FSD053") == ([line + 1] if line else [])


def test_fsd053_follows_a_module_sharded_by_a_helper():
    code = LOAD.format(first="model = shard(model)", second="model.load_state_dict(torch.load(path))")
    code += "def shard(m):\n    fully_shard(m)\n    return m\n"
    assert _codes(code, "FSD053") == [7]


EVAL = """
import torch
from accelerate import Accelerator
accelerator = Accelerator()
model, loader = accelerator.prepare(model, loader)
def evaluate():
    correct = 0
    for x, y in {loader}:
        with torch.no_grad():
            p = model(x).argmax(-1)
        {line}
    return correct
"""


@pytest.mark.parametrize(
    "loader, line, fires",
    [
        ("loader", "p, y = accelerator.gather((p, y)); correct += (p == y).sum().item()", True),
        ("tqdm(loader)", "metric.add_batch(predictions=accelerator.gather(p), references=accelerator.gather(y))", True),
        ("loader", "p, y = accelerator.gather_for_metrics((p, y)); correct += (p == y).sum().item()", False),
        ("raw_loader", "p, y = accelerator.gather((p, y)); correct += (p == y).sum().item()", False),  # not prepared
        ("loader", "accelerator.print(accelerator.gather(p).shape)", False),  # no metric
        ("loader", "p = accelerator.gather(p)[: len(loader.dataset)]; correct += p.sum()", False),  # trimmed by hand
    ],
)
def test_fsd052_gather_into_a_metric_over_a_prepared_loader(loader, line, fires):
    assert _codes(EVAL.format(loader=loader, line=line), "FSD052") == ([11] if fires else [])


def test_fsd052_silent_outside_accelerate():
    code = EVAL.format(loader="loader", line="p, y = accelerator.gather((p, y)); correct += (p == y).sum().item()")
    assert _codes(code.replace("from accelerate import Accelerator", "from mylib import Accelerator"), "FSD052") == []


def test_fsd052_an_accelerator_built_in_either_branch_of_a_conditional():
    code = EVAL.format(loader="loader", line="metric.add_batch(predictions=accelerator.gather(p), references=y)").replace(
        "accelerator = Accelerator()", "accelerator = Accelerator(log_with='all') if tracking else Accelerator()"
    )
    assert _codes(code, "FSD052") == [11]


def test_fsd052_silent_in_a_training_loop_that_logs_a_gathered_loss():
    code = EVAL.format(
        loader="loader",
        line="loss = model(x).mean(); accelerator.backward(loss); correct += accelerator.gather(loss.repeat(8)).mean().item()",
    )
    assert _codes(code, "FSD052") == []


def test_fsd049_points_at_the_load_in_a_helper_once_for_every_wrap():
    """A helper loads with device_map="auto"; two wraps reach it: one finding, at the helper's device_map=, naming the
    first wrap (the helper is what to change)."""
    code = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from transformers import AutoModel\n"
        "def load():\n"
        "    return AutoModel.from_pretrained(\n"
        '        "m",\n'
        '        device_map="auto",\n'
        "    )\n"
        "a = DDP(load())\n"
        "b = DDP(load())\n"
    )
    found = [f for f in check_source(code, "t.py") if f.code == "FSD049"]
    assert [(f.line, f.col) for f in found] == [(6, 9)]
    assert "wrapped in DDP at line 8" in found[0].message


def test_fsd050_a_checkpointed_module_built_into_the_wrapped_one():
    """CodeBERT-style: ``encoder.gradient_checkpointing_enable()`` and ``DDP(Model(encoder, cfg).to(rank))`` are one
    model; an encoder that is not passed into what DDP wraps is another model."""
    src = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "encoder.gradient_checkpointing_enable()\n"
        "model = Model(cfg, ENC).to(rank)\n"
        "m = DDP(model, find_unused_parameters=True)\n"
    )
    assert _codes(src.replace("ENC", "encoder"), "FSD050") == [2]
    assert _codes(src.replace("ENC", "encoder=encoder"), "FSD050") == [2]
    assert _codes(src.replace("ENC", "other"), "FSD050") == []
