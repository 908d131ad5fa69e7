"""FSD037, FSD038, FSD040, FSD045, FSD046 (``skill/core/check/divergence.py``): each fires where the fixtures of
``tests/data/check/divergence/`` mark it (``# <- FSDxxx``), in the shapes real code takes (a Trainer class, a
Lightning-like callback, a nanoGPT-style script, a plain loop), and nowhere else; the overlaps with the
rank-conditional rules are reported once. The marked fixtures are checked in ``tests/test_check_marked.py``; this file holds the edges."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsdp_skill.core.check import check_source


def _codes(code: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source(code, "t.py")]


HOOK = """
import torch.distributed as dist
class CB:
    def on_epoch_end(self, trainer, pl_module):
        if trainer.global_rank != 0:
            return
        print("rank 0 work")
        {sync}
"""


def test_a_return_before_a_torch_collective_is_fsd003s_and_before_a_framework_one_fsd037s():
    assert _codes(HOOK.format(sync="dist.barrier()")) == [(8, "FSD003")]
    assert _codes(HOOK.format(sync="trainer.strategy.barrier()")) == [(6, "FSD037")]


def test_an_exit_in_the_other_branch_of_an_if_skips_nothing():
    """accelerate's load_fsdp_model once: the non-zero ranks return in the FULL_STATE_DICT branch, dcp.load sits in
    the SHARDED branch that no rank of that call takes."""
    code = (
        "import torch.distributed.checkpoint as dcp\n"
        "def load(kind, rank, sd):\n"
        "    if kind == 'full':\n"
        "        if rank != 0:\n"
        "            return\n"
        "        print(sd)\n"
        "    elif kind == 'sharded':\n"
        "        dcp.load(sd, checkpoint_id='c')\n"
    )
    assert _codes(code) == []


def test_continue_skips_only_what_follows_it_in_the_iteration():
    code = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def train(net, loader, rank):\n"
        "    model = DDP(net)\n"
        "    for x in loader:\n"
        "        model(x).sum().backward()\n"
        "        if rank != 0:\n"
        "            continue\n"
        "        print(x)\n"
    )
    assert _codes(code) == []
    # the rest of the iteration holds a DDP forward: FSD045 reports it (one finding for one mistake), a framework
    # collective: FSD037 reports the exit
    assert _codes(code.replace("print(x)", "model(x).sum().backward()")) == [(8, "FSD045")]
    assert _codes(code.replace("print(x)", "accelerator.wait_for_everyone()")) == [(7, "FSD037")]


def test_a_break_out_of_a_loop_without_synchronised_work_is_silent():
    code = "def f(rank, items):\n    for i in items:\n        print(i)\n        if rank == 0:\n            break\n"
    assert _codes(code) == []


REDUCE = """
import torch
import torch.distributed as dist
def fit(model, loader, t):
    for x in loader:
        model(x).sum().backward()
        dist.reduce(t, dst=0)
        {between}
        if t.item() > 1:
            dist.barrier()
"""


@pytest.mark.parametrize(
    "between, found",
    [
        ("pass", [(9, "FSD038")]),
        ("dist.broadcast(t, src=0)", []),  # every rank holds rank 0's value again
        ("t = torch.zeros(1)", []),  # rebound: the test reads another value
    ],
)
def test_a_reduced_value_is_one_ranks_until_broadcast_or_rebound(between, found):
    assert _codes(REDUCE.format(between=between)) == found


def test_a_flag_set_on_rank_0_inside_a_while_loop_reaches_its_test_on_the_next_iteration():
    code = (
        "import torch.distributed as dist\n"
        "def fit(step, rank):\n"
        "    stop = False\n"
        "    while not stop:\n"
        "        step()\n"
        "        dist.barrier()\n"
        "        if rank == 0:\n"
        "            stop = step.done\n"
    )
    assert _codes(code) == [(4, "FSD038")]
    synced = code + "        stop = dist.broadcast_object_list([stop], src=0)\n"
    assert _codes(synced) == []


def test_a_decision_guarding_only_local_work_is_silent():
    code = (
        "import torch.distributed as dist\n"
        "def report(t):\n"
        "    dist.reduce(t, dst=0)\n"
        "    if t.item() > 1:\n"
        "        print('big')\n"
    )
    assert _codes(code) == []


def test_no_sync_rules_leave_fsdp2_to_fsd018_and_accept_accelerate_shapes():
    code = (
        "from torch.distributed.fsdp import fully_shard\n"
        "def f(model, net, x, opt, accelerator):\n"
        "    fully_shard(model)\n"
        "    with model.no_sync():\n"
        "        model(x).sum().backward()\n"
        "        opt.step()\n"
        "    with accelerator.no_sync(net):\n"
        "        accelerator.backward(net(x).sum())\n"
        "        opt.step()\n"
    )
    assert _codes(code) == [(4, "FSD018"), (9, "FSD040")]


def test_backward_only_inside_no_sync_needs_a_known_ddp_and_a_forward_before():
    code = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def f(net, x, compute):\n"
        "    model = DDP(net)\n"
        "    loss = model(x).sum()\n"
        "    with model.no_sync():\n"
        "        loss.backward()\n"
    )
    assert _codes(code) == [(5, "FSD046")]
    assert _codes(code.replace("        loss.backward()", "        compute(model, x).backward()")) == []
    assert _codes(code.replace("model = DDP(net)", "model = net")) == []  # FSDP1 no_sync is read in backward


def test_a_ddp_forward_on_rank_0_is_fsd045_and_a_joined_one_stays_fsd036():
    code = (
        "import torch.distributed as dist\n"
        "from torch.distributed.algorithms import Join\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def f(net, xs, x):\n"
        "    model = DDP(net)\n"
        "    {join}\n"
        "    if dist.get_rank() == 0:\n"
        "        model(x)\n"
    )
    assert _codes(code.format(join="pass")) == [(8, "FSD045")]
    assert _codes(code.format(join="Join([model])")) == [(8, "FSD036")]


def test_a_ddp_forward_in_both_branches_or_under_not_distributed_is_silent():
    code = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def f(net, x, rank):\n"
        "    model = DDP(net)\n"
        "    if rank == 0:\n"
        "        print(model(x))\n"
        "    else:\n"
        "        model(x)\n"
        "    if rank == -1:\n"
        "        model(x)\n"
    )
    assert _codes(code) == []


ATTR = """
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
class Trainer:
    def __init__(self, net):
        self.model = DDP(net)
        self.should_stop = False
    def validate(self, val):
        if dist.get_rank() == 0 and val > 1:
            self.should_stop = True
        {sync}
    def fit(self, loader, val):
        for x in loader:
            self.model(x).sum().backward()
            self.validate(val)
            if self.should_stop:
                break
"""


@pytest.mark.parametrize(
    "sync, found",
    [
        ("pass", [(16, "FSD038")]),  # only rank 0 ever writes it after __init__
        ("self.should_stop = self.strategy.broadcast(self.should_stop)", []),  # every rank takes rank 0's value
        ("dist.broadcast_object_list([self.should_stop], src=0)", []),  # handed to a collective
    ],
)
def test_an_attribute_written_only_under_a_rank_condition_is_one_ranks(sync, found):
    assert _codes(ATTR.format(sync=sync)) == found


def test_fsd045_is_silent_when_the_forward_buffer_sync_is_off_by_either_argument():
    """torch 2.13 deprecates broadcast_buffers for forward_sync_buffers (which wins when both are given)."""
    code = (
        "import torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def f(net, x):\n"
        "    model = DDP(net{args})\n"
        "    model(x).sum().backward()\n"
        "    if dist.get_rank() == 0:\n"
        "        model(x)\n"
    )
    assert _codes(code.format(args="")) == [(7, "FSD045")]
    assert _codes(code.format(args=", broadcast_buffers=False")) == []
    assert _codes(code.format(args=", forward_sync_buffers=False")) == []
    assert _codes(code.format(args=", broadcast_buffers=False, forward_sync_buffers=True")) == [(7, "FSD045")]


TOP = Path(__file__).parent / "data" / "check"


def test_fsd045_a_forward_before_the_ddp_wrap_or_after_unwrapping_is_not_through_ddp():
    """llm.c runs a reference forward on the master process before ``model = DDP(model)``; open_clip's evaluate
    unwraps (``model = model.module``) before its rank-0 forward. The same forwards after the wrap, or without the
    unwrap, are reported."""
    good = (TOP / "FSD045_good_before_wrap.py").read_text()
    assert [c for c in _codes(good) if c[1] == "FSD045"] == []
    no_unwrap = good.replace("        model = model.module\n", "        pass\n")
    assert [c for c in _codes(no_unwrap) if c[1] == "FSD045"] == [(26, "FSD045")]
    after_wrap = good.replace("    model = DDP(model, device_ids=[ddp_local_rank])\n", "").replace(
        "    model = torch.compile(model)\n", "    model = DDP(torch.compile(model), device_ids=[ddp_local_rank])\n"
    )
    assert (37, "FSD045") in _codes(after_wrap)


def test_fsd037_a_continue_after_the_same_collective_skips_nothing_but_one_before_a_condition_does():
    good = (TOP / "FSD037_good_collective_before_continue.py").read_text()
    assert [c for c in _codes(good) if c[1] == "FSD037"] == []
    # the all_gather before the continue only on some iterations: the continuing rank may skip its one
    guarded = good.replace(
        "                        dist.all_gather(params_pad[base_i : base_i + world_size], params_pad[base_i + rank])\n",
        "                        if p.grad is None:\n"
        "                            dist.all_gather(params_pad[base_i : base_i + world_size], params_pad[base_i + rank])\n",
    )
    assert [c for c in _codes(guarded) if c[1] == "FSD037"] == [(25, "FSD037")]
    # another collective before the continue: the all_gather is still skipped
    other = good.replace(
        "dist.all_gather(params_pad[base_i : base_i + world_size], params_pad[base_i + rank])\n  ", "dist.all_reduce(p)\n  ", 1
    )
    assert [c for c in _codes(other) if c[1] == "FSD037"] == [(24, "FSD037")]


def test_fsd038_the_else_branch_of_the_reduce_is_not_after_it():
    good = (TOP / "FSD038_good_other_branch.py").read_text()
    assert [c for c in _codes(good) if c[1] == "FSD038"] == []
    after = good.replace("    else:\n        if isinstance", "    if True:\n        if isinstance")
    assert [c for c in _codes(after) if c[1] == "FSD038"] == [(17, "FSD038")]


REDUCED = """
import torch
import torch.distributed as dist
def score(t):
    dist.reduce(t, dst=0)
    {derive}
    return {ret}
def fit(model, x, t):
    got = score(t)
    if {test}:
        dist.barrier()
"""


@pytest.mark.parametrize(
    ("derive", "ret", "test", "fires"),
    [
        ("v = t[0] / t[1]", "v", "got > 0.5", True),
        ("v = t.sum().item()", "v * 2", "got > 0.5", True),
        ("pass", "t", "got.max() > 0.5", True),
        ("n = t.numel()", "n", "got > 1", False),  # its shape: the same on every rank
        ("n = len(t)", "n", "got > 1", False),
        ("dist.broadcast(t, src=0)", "t[0]", "got > 0.5", False),  # every rank holds it again
        ("v = t[0]", "v", "dist.get_rank() == 0 and got > 0.5", False),  # rank 0's own decision
    ],
)
def test_fsd038_carries_a_reduced_value_through_derivations_and_returns(derive, ret, test, fires):
    code = REDUCED.format(derive=derive, ret=ret, test=test)
    assert [ln for ln, c in _codes(code) if c == "FSD038"] == ([10] if fires else [])


INTERACTIVE = """import torch.distributed as dist
obj = [None]
{loop}
    {pre}
    if dist.get_rank() == 0:
        prompt = input()
        if not prompt:
            continue
        obj = [prompt]
    dist.broadcast_object_list(obj, src=0)
"""


@pytest.mark.parametrize(
    ("loop", "pre", "found"),
    [
        ("while True:", "pass", []),  # metaseq's interactive loop: rank 0 asks again, the others wait in the broadcast
        ("while 1:", "pass", []),
        ("while True:", "dist.barrier()", [(8, "FSD037")]),  # the barrier is made again, the others are in the broadcast
        ("for _ in range(10):", "pass", [(8, "FSD037")]),  # a counted loop: rank 0 runs out of iterations first
        ("while steps < 10:", "pass", [(8, "FSD037")]),
    ],
)
def test_fsd037_a_continue_before_any_collective_of_a_while_true_loop_only_starts_it_again(loop, pre, found):
    assert _codes(INTERACTIVE.format(loop=loop, pre=pre)) == found
