"""FSD077-FSD080 (``skill/core/check/step_rules.py``): the marked fixtures of ``tests/data/check/step/`` are checked
in ``tests/test_check_marked.py``; this file holds the edges: what each rule is silent on, and where it leaves a
call to the rule that already covers it (FSD021, FSD044, FSD052)."""

from __future__ import annotations

import pytest

from fsdp_skill.core.check import check_source

CODES = {"FSD077", "FSD078", "FSD079", "FSD080"}


def _codes(code: str, only: set[str] = CODES) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source(code, "t.py") if f.code in only]


# --- FSD077 -------------------------------------------------------------------------------------------------

NET = """
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.extra = {extra}
    def forward(self, x, flag=False):
{forward}
{setup}
model = DDP(Net(){kwargs})
"""
USED_IF_FLAG = "        x = self.body(x)\n        if flag:\n            x = self.extra(x)\n        return x"
USED_ALWAYS = "        return self.extra(self.body(x))"
EARLY = "        if flag:\n            return self.body(x)\n        return self.extra(self.body(x))"


@pytest.mark.parametrize(
    ("extra", "forward", "setup", "kwargs", "fires"),
    [
        ("nn.Linear(4, 4)", USED_IF_FLAG, "", "", True),  # the default leaves self.extra out of every call
        ("nn.Linear(4, 4)", USED_IF_FLAG, "net(x, flag=True)", "", True),  # out of some calls
        ("nn.Linear(4, 4)", USED_IF_FLAG, "", ", find_unused_parameters=True", False),
        ("nn.Linear(4, 4)", USED_IF_FLAG, "", ", find_unused_parameters=False", True),
        ("nn.Linear(4, 4)", USED_IF_FLAG, "", ", find_unused_parameters=args.unused", False),  # the file cannot tell
        ("nn.Linear(4, 4)", USED_IF_FLAG, "", ", static_graph=True", False),
        ("nn.Linear(4, 4)", USED_IF_FLAG, "", ", **ddp_kwargs", False),
        ("nn.Linear(4, 4)", USED_ALWAYS, "", "", False),
        ("nn.Dropout(0.1)", USED_IF_FLAG, "", "", False),  # no parameters: nothing waits for a gradient
        ("nn.LayerNorm(4, elementwise_affine=False)", USED_IF_FLAG, "", "", False),
        ("nn.Parameter(torch.ones(4), requires_grad=False)", "        return self.body(x)", "", "", False),
        ("nn.Parameter(torch.ones(4))", "        return self.body(x)", "", "", True),
        ("nn.Linear(4, 4)", "        return self.body(x)", "", "", True),  # never used
        # frozen where the file shows it: the part, or the whole model or by name (the file cannot tell which)
        ("nn.Linear(4, 4)", USED_IF_FLAG, "net = Net()\nnet.extra.requires_grad_(False)", "", False),
        ("nn.Linear(4, 4)", USED_IF_FLAG, "net = Net()\nnet.other.requires_grad_(False)", "", True),
        ("nn.Linear(4, 4)", USED_IF_FLAG, "net = Net()\nnet.requires_grad_(False)", "", False),
        ("nn.Linear(4, 4)", USED_IF_FLAG, "for n, p in net.named_parameters():\n    p.requires_grad = 'body' in n", "", False),
        ("nn.Linear(4, 4)", USED_IF_FLAG, "net = Net()\nnet.extra.requires_grad_(True)", "", True),
        # reached dynamically: silent
        ("nn.Linear(4, 4)", "        return sum(getattr(self, n)(x) for n in ('body', 'extra'))", "", "", False),
        ("nn.Linear(4, 4)", "        return helper(self, x)", "", "", False),
        ("nn.Linear(4, 4)", "        return super().forward(x)", "", "", False),
        ("nn.Linear(4, 4)", "        return sum(p.sum() for p in self.parameters()) * self.body(x)", "", "", False),
        # self.training: a training step takes the arm, evaluation runs no backward
        (
            "nn.Linear(4, 4)",
            "        x = self.body(x)\n        if self.training:\n            x = self.extra(x)\n        return x",
            "",
            "",
            False,
        ),
        (
            "nn.Linear(4, 4)",
            "        x = self.body(x)\n        if not self.training:\n            x = self.extra(x)\n        return x",
            "",
            "",
            True,
        ),
        (
            "nn.Linear(4, 4)",
            "        if self.training:\n            return self.extra(self.body(x))\n        return self.body(x)",
            "",
            "",
            False,
        ),
        # an early return on a flag every call of the file leaves at its default (features for evaluation): the
        # default path only; passed by a call (or maybe through **kwargs), or on the data: some calls only
        ("nn.Linear(4, 4)", EARLY, "", "", False),
        ("nn.Linear(4, 4)", EARLY, "net(x, flag=True)", "", True),
        ("nn.Linear(4, 4)", EARLY, "def step(m, x):\n    m(x, **kw)", "", True),
        ("nn.Linear(4, 4)", EARLY.replace("if flag:", "if x.sum() > 0:"), "", "", True),
        # the same part on both paths
        (
            "nn.Linear(4, 4)",
            "        if flag:\n            return self.extra(self.body(x))\n        return self.extra(self.body(x)) * 2",
            "",
            "",
            False,
        ),
        ("nn.Linear(4, 4)", "        y = self.body(x)\n        return self.extra(y) if flag else self.extra(-y)", "", "", False),
        ("nn.Linear(4, 4)", "        y = self.body(x)\n        return self.extra(y) if flag else y", "", "", True),
        # a method of the class called from forward, on every call or under a flag
        (
            "nn.Linear(4, 4)",
            "        return self.head(self.body(x))\n    def head(self, h):\n        return self.extra(h)",
            "",
            "",
            False,
        ),
        (
            "nn.Linear(4, 4)",
            "        return self.head(self.body(x)) if flag else x\n    def head(self, h):\n        return self.extra(h)",
            "",
            "",
            True,
        ),
    ],
)
def test_fsd077_edges(extra, forward, setup, kwargs, fires):
    code = NET.format(extra=extra, forward=forward, setup=setup, kwargs=kwargs)
    line = next(i for i, text in enumerate(code.splitlines(), 1) if text.startswith("model = DDP("))
    assert _codes(code) == ([(line, "FSD077")] if fires else [])


def test_fsd077_silent_where_the_forward_is_not_in_the_file():
    code = "from torch.nn.parallel import DistributedDataParallel as DDP\nfrom models import Net\nmodel = DDP(Net())\n"
    assert _codes(code) == []


def test_fsd077_a_part_created_only_under_a_flag_is_used_under_the_same_flag():
    code = NET.format(extra="None", forward=USED_IF_FLAG, setup="", kwargs="").replace(
        "        self.extra = None", "        self.extra = None\n        if True:\n            self.aux = nn.Linear(4, 4)"
    )
    assert _codes(code) == []


# --- FSD078 -------------------------------------------------------------------------------------------------

EVAL = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
def evaluate(model, dataset):
    loader = DataLoader(dataset, batch_size=4, sampler={sampler})
    preds = []
    for x, y in loader:
        preds.append(model(x)){step}
    out = [torch.zeros_like(preds[0]) for _ in range(dist.get_world_size())]
    {gather}
    return torch.cat(out){cut}
"""


@pytest.mark.parametrize(
    ("sampler", "step", "gather", "cut", "want"),
    [
        ("DistributedSampler(dataset)", "", "dist.all_gather(out, preds[0])", "", [(11, "FSD078")]),
        ("DistributedSampler(dataset, drop_last=False)", "", "dist.all_gather(out, preds[0])", "", [(11, "FSD078")]),
        ("DistributedSampler(dataset)", "", "dist.gather(preds[0], out)", "", [(11, "FSD078")]),
        ("DistributedSampler(dataset, drop_last=True)", "", "dist.all_gather(out, preds[0])", "", []),
        ("DistributedSampler(dataset, drop_last=args.drop)", "", "dist.all_gather(out, preds[0])", "", []),
        ("DistributedSampler(dataset)", "", "dist.all_gather(out, preds[0])", "[: len(dataset)]", []),
        ("DistributedSampler(dataset)", "", "dist.all_gather(out, preds[0])", "[: num_samples]", []),
        ("DistributedSampler(dataset)", "", "dist.all_gather(out, preds[0])", "[:, :2]", [(11, "FSD078")]),  # not a length
        (
            "DistributedSampler(dataset)",
            "\n        model(x).sum().backward()",
            "dist.all_gather(out, preds[0])",
            "",
            [],
        ),  # training
        ("MySampler(dataset)", "", "dist.all_gather(out, preds[0])", "", []),
        ("DistributedSampler(dataset)", "", "dist.all_reduce(out[0])", "", []),  # not a count the loop summed
    ],
)
def test_fsd078_edges(sampler, step, gather, cut, want):
    assert _codes(EVAL.format(sampler=sampler, step=step, gather=gather, cut=cut)) == want


def test_fsd078_leaves_accelerate_gather_to_fsd052():
    code = """
from accelerate import Accelerator
from torch.utils.data import DataLoader
accelerator = Accelerator()
model, loader = accelerator.prepare(model, DataLoader(ds, batch_size=4))
preds = []
for x, y in loader:
    preds.append(accelerator.gather(model(x)))
metric.compute(predictions=preds)
"""
    found = {c for _, c in _codes(code, {"FSD052", "FSD078"})}
    assert "FSD078" not in found


# --- FSD079 -------------------------------------------------------------------------------------------------

SPLIT = """
import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join
def train(model, data, rank, world):
    part = {part}
    for x in part:
        {body}
"""


@pytest.mark.parametrize(
    ("part", "body", "want"),
    [
        ("data[rank::world]", "model(x).sum().backward()", [(8, "FSD079")]),
        ("np.array_split(data, world)[rank]", "model(x).sum().backward()", [(8, "FSD079")]),
        ("torch.tensor_split(data, world)[rank]", "model(x).sum().backward()", [(8, "FSD079")]),
        ("data.chunk(world)[rank]", "dist.all_reduce(x)", [(8, "FSD079")]),
        ("data[rank::world]", "print(x)", []),  # no backward, no collective: nothing to wait in
        ("data[rank * 4 : (rank + 1) * 4]", "model(x).sum().backward()", []),  # equal slices
        ("data[: len(data) // world * world][rank::world]", "model(x).sum().backward()", []),  # cut to a multiple
        (  # padded to a multiple before the split (stylegan3's metrics)
            "torch.nn.functional.pad(data, [0, 0, 0, -len(data) % world]).chunk(world)[rank]",
            "dist.all_reduce(x)",
            [],
        ),
        ("np.pad(data, (0, -len(data) % world))[rank::world]", "model(x).sum().backward()", []),
        ("data[::2]", "model(x).sum().backward()", []),  # not split by rank
        ("data[rank::world]", "model(x).sum().backward()\n        if x.sum() > 0:\n            break", []),
        ("np.array_split(data, world)[0]", "model(x).sum().backward()", []),
    ],
)
def test_fsd079_edges(part, body, want):
    assert _codes(SPLIT.format(part=part, body=body)) == want


def test_fsd079_silent_when_the_data_is_first_cut_to_a_multiple_of_the_world():
    code = SPLIT.format(part="data[rank::world]", body="model(x).sum().backward()").replace(
        "    part = ", "    data = data[: len(data) // world * world]\n    part = "
    )
    assert _codes(code) == []


@pytest.mark.parametrize(
    "wrap",
    [
        "    with Join([model]):\n        for x in part:\n            model(x).sum().backward()\n",
        "    with model.join():\n        for x in part:\n            model(x).sum().backward()\n",
        "    n = torch.tensor([len(part)])\n    dist.all_reduce(n, op=dist.ReduceOp.MIN)\n    for x in part:\n        model(x).sum().backward()\n",
    ],
)
def test_fsd079_silent_with_join_or_an_agreed_count(wrap):
    code = (
        "import torch\nimport torch.distributed as dist\nfrom torch.distributed.algorithms.join import Join\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def train(net, data, rank, world):\n    model = DDP(net)\n    part = data[rank::world]\n" + wrap
    )
    assert _codes(code) == []


def test_fsd079_distributed_sampler_pads_and_is_not_a_hand_split():
    code = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "for x in DataLoader(ds, sampler=DistributedSampler(ds, drop_last=False)):\n    model(x).sum().backward()\n"
    )
    assert _codes(code) == []


# --- FSD080 -------------------------------------------------------------------------------------------------

FSDP2 = """
from torch.distributed.fsdp import fully_shard, register_fsdp_forward_method
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained("gpt2")
for block in model.transformer.h:
    fully_shard(block{raf})
fully_shard(model{raf})
{register}
out = model.generate(ids{kw})
"""


@pytest.mark.parametrize(
    ("raf", "register", "kw", "want"),
    [
        ("", 'register_fsdp_forward_method(model, "generate")', "", [(9, "FSD080")]),
        ("", 'register_fsdp_forward_method(model, "generate")', ", synced_gpus=True", []),
        ("", 'register_fsdp_forward_method(model, "generate")', ", synced_gpus=args.sync", []),
        ("", 'register_fsdp_forward_method(model, "generate")', ", **gen_kwargs", []),
        (", reshard_after_forward=False", 'register_fsdp_forward_method(model, "generate")', "", []),
        ("", "", "", [(9, "FSD021")]),  # not registered: FSD021's finding, not a second one
    ],
)
def test_fsd080_fsdp2(raf, register, kw, want):
    assert _codes(FSDP2.format(raf=raf, register=register, kw=kw), CODES | {"FSD021"}) == want


def test_fsd080_needs_a_transformers_generate():
    code = FSDP2.format(raf="", register='register_fsdp_forward_method(model, "generate")', kw="").replace(
        "from transformers import AutoModelForCausalLM\n", "from mymodels import AutoModelForCausalLM\n"
    )
    assert _codes(code) == []  # nanoGPT-style generate: a fixed number of steps, no early stop


FSDP1 = """
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
from transformers import AutoModelForCausalLM
model = FSDP(AutoModelForCausalLM.from_pretrained("gpt2"){kwargs})
{context}
    out = model.generate(ids)
"""
SUMMON = "with FSDP.summon_full_params(model, writeback=False, recurse=False):"


@pytest.mark.parametrize(
    ("kwargs", "context", "want"),
    [
        (", auto_wrap_policy=policy", SUMMON, [(7, "FSD080")]),
        (", auto_wrap_policy=policy", "if True:", [(7, "FSD044")]),  # outside the context: FSD044's, not a second one
        ("", SUMMON, []),  # the root is the only unit: everything gathered in the context
        (", auto_wrap_policy=policy, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP", SUMMON, []),
        (
            ", auto_wrap_policy=policy",
            "ctx = lambda: FSDP.summon_full_params(model, writeback=False, recurse=False) if use_fsdp else nullcontext()\nwith ctx():",
            [(8, "FSD080")],
        ),  # direct-preference-optimization's shape: the context a lambda returns (FSD044 follows it too)
    ],
)
def test_fsd080_fsdp1(kwargs, context, want):
    assert _codes(FSDP1.format(kwargs=kwargs, context=context), CODES | {"FSD044"}) == want


DS = """
import deepspeed
from transformers import AutoModelForCausalLM
{extra}
config = {{"zero_optimization": {{"stage": {stage}}}}}
model = AutoModelForCausalLM.from_pretrained("gpt2")
engine, *_ = deepspeed.initialize(model=model, config=config)
out = engine.module.generate(ids)
"""


@pytest.mark.parametrize(
    ("stage", "extra", "want"),
    [
        (3, "", [(8, "FSD080")]),
        (2, "", []),  # ZeRO-2: parameters whole on every rank
        (3, "from transformers.integrations import HfDeepSpeedConfig\nkeep = HfDeepSpeedConfig({})", []),
    ],
)
def test_fsd080_deepspeed(stage, extra, want):
    code = DS.format(stage=stage, extra=extra)
    shift = extra.count("\n")
    assert _codes(code) == [(line + shift, c) for line, c in want]


ACCUM = """
import torch
from accelerate import Accelerator
accelerator = Accelerator({acc})
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for step, (x, y) in enumerate(loader):
    loss = model(x).sum() / 4
    {backward}
    if {test}:
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize(
    "acc, backward, test, lines",
    [
        ("", "accelerator.backward(loss)", "step % 4 == 0", [8]),
        ("", "loss.backward()", "(step + 1) % 4 == 0", [8]),
        ("gradient_accumulation_steps=4", "accelerator.backward(loss)", "(step + 1) % 4 == 0", []),  # accelerate's own
        ("", "accelerator.backward(loss)", "accelerator.sync_gradients", []),  # no hand-written `%` step
        ("", "if step > 0: accelerator.backward(loss)", "step % 4 == 0", []),  # the backward is conditional
    ],
)
def test_fsd083_hand_accumulation_without_no_sync(acc, backward, test, lines):
    src = ACCUM.format(acc=acc, backward=backward, test=test)
    assert [f.line for f in check_source(src, "t.py") if f.code == "FSD083"] == lines


def test_fsd083_silent_for_fsdp_and_for_an_optimizer_that_steps_every_iteration():
    src = ACCUM.format(acc="", backward="accelerator.backward(loss)", test="step % 4 == 0")
    fsdp = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nmodel = FSDP(model)\n" + src
    assert [f.line for f in check_source(fsdp, "t.py") if f.code == "FSD083"] == []
    every = src.replace("    if step % 4 == 0:\n        optimizer.step()\n", "    optimizer.step()\n    if step % 4 == 0:\n")
    assert [f.line for f in check_source(every, "t.py") if f.code == "FSD083"] == []
