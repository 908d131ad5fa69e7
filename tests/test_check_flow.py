"""FSD054-FSD060 (``skill/core/check/flow_rules.py``): each fires where the fixtures of ``tests/data/check/flow/``
mark it (``# <- FSDxxx``), in the shapes real code takes (an accelerate loop and helper, a Lightning module and
callback, a DDP script, an FSDP Trainer class), and nowhere else. The marked fixtures are checked in ``tests/test_check_marked.py``; this file holds the edges."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsdp_skill.core.check import check_paths, check_source


def _codes(code: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source(code, "t.py")]


ACCEL = """
from accelerate import Accelerator
accelerator = Accelerator()
def evaluate(preds):
    if accelerator.is_main_process:
        {body}
"""


@pytest.mark.parametrize(
    ("body", "want"),
    [
        ("print(accelerator.gather(preds))", [(6, "FSD054")]),
        ("accelerator.wait_for_everyone()", [(6, "FSD054")]),
        ("accelerator.reduce(preds)", [(6, "FSD054")]),
        ("accelerator.pad_across_processes(preds)", [(6, "FSD054")]),
        ("print(preds)", []),
        ("accelerator.save_model(preds, 'out')", []),
    ],
)
def test_accelerate_collectives_under_the_main_process(body, want):
    assert _codes(ACCEL.format(body=body)) == want


def test_a_torch_collective_stays_fsd003s_and_an_exit_before_a_framework_one_fsd037s():
    torch_one = "import torch.distributed as dist\ndef f(t):\n    if dist.get_rank() == 0:\n        dist.barrier()\n"
    assert _codes(torch_one) == [(4, "FSD003")]
    hook = (
        "class CB:\n    def on_epoch_end(self, trainer, pl_module):\n        if trainer.global_rank != 0:\n"
        "            return\n        trainer.strategy.barrier()\n"
    )
    assert _codes(hook) == [(4, "FSD037")]


def test_self_log_needs_sync_dist_and_a_lightning_module():
    lit = (
        "import lightning.pytorch as pl\nclass M(pl.LightningModule):\n    def validation_step(self, batch, i):\n"
        "        if self.trainer.is_global_zero:\n            self.log('v', 1.0, sync_dist={flag})\n"
    )
    assert _codes(lit.format(flag="True")) == [(5, "FSD054")]
    assert _codes(lit.format(flag="False")) == []
    plain = "class Logger:\n    def step(self, rank):\n        if rank == 0:\n            self.all_gather(1)\n"
    assert _codes(plain) == []  # not a Lightning module: all_gather is the class's own method


NAN = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
def train(net, loader, opt):
    model = DDP(net)
    for batch in loader:
        loss = model(batch).sum()
        if {test}:
            continue
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize(
    ("test", "want"),
    [
        ("torch.isnan(loss)", [(9, "FSD057")]),
        ("loss.isinf().any()", [(9, "FSD057")]),
        ("batch is None", [(9, "FSD057")]),
        ("batch.numel() == 0", [(9, "FSD057")]),
        ("not batch", [(9, "FSD057")]),  # the loop's own target
        ("split_batch is None", []),  # a setting, not data
        ("not dispatch_batches", []),
        ("epoch < 3", []),  # the same on every rank
        ("step_is_warmup(epoch)", []),
    ],
)
def test_data_dependent_skip_before_a_ddp_backward(test, want):
    assert _codes(NAN.format(test=test)) == want


def test_a_skip_after_the_backward_skips_no_synchronised_work():
    code = NAN.replace("        loss.backward()\n", "").replace(
        "    for batch in loader:\n", "    for batch in loader:\n        pass\n"
    )
    code = code.replace("        loss = model(batch).sum()\n", "        loss = model(batch).sum()\n        loss.backward()\n")
    assert _codes(code.format(test="torch.isnan(loss)")) == []


FS = """
import os
import torch.distributed as dist
def resume(state, rank):
    path = {path}
    if os.path.exists(path):
        dist.barrier()
"""


@pytest.mark.parametrize(
    ("path", "want"),
    [
        ('"/dev/shm/cache.pt"', [(6, "FSD056")]),
        ('f"cache_{rank}.pt"', [(6, "FSD056")]),
        ('os.path.join(tempfile.gettempdir(), "x")', [(6, "FSD056")]),
        ('"/checkpoints/run1/latest"', []),  # a shared path: the same answer on every rank, as far as the file tells
        ('os.path.join(args_output_dir, "latest")', []),
    ],
)
def test_filesystem_fact_is_reported_only_where_the_ranks_can_answer_differently(path, want):
    code = FS.format(path=path)
    if "tempfile" in path:
        code = "import tempfile\n" + code
        want = [(line + 1, c) for line, c in want]
    assert _codes(code) == want


SAVE = """
import torch
import torch.distributed as dist
def roundtrip(model, path):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), path)
    {between}
    return torch.load({read}, map_location="cpu")
"""


@pytest.mark.parametrize(
    ("between", "read", "want"),
    [
        ("pass", "path", [(8, "FSD055")]),
        ("dist.barrier()", "path", []),
        ("dist.all_reduce(torch.zeros(1))", "path", []),  # any collective orders the write before the read
        ("pass", "other_path", []),  # another file
    ],
)
def test_a_rank_zero_write_read_everywhere(between, read, want):
    assert _codes(SAVE.format(between=between, read=read)) == want


ACCEL_EXPORT = """
from accelerate import Accelerator
from transformers import AutoModel
accelerator = Accelerator()
def sync(acc):
    {sync_body}
def export(model, out):
    if accelerator.is_main_process:
        accelerator.unwrap_model(model).save_pretrained(out)
    {between}
    return AutoModel.from_pretrained({read})
"""


@pytest.mark.parametrize(
    ("sync_body", "between", "read", "want"),
    [
        ("acc.wait_for_everyone()", "sync(accelerator)", "out", []),  # the barrier hidden in a helper counts
        ("print('synced')", "sync(accelerator)", "out", [(11, "FSD055")]),  # a helper that waits for nothing
        ("pass", "pass", "out", [(11, "FSD055")]),
        ("pass", "pass", "'gpt2'", []),  # another model
        ("pass", "name = out", "name", [(11, "FSD055")]),  # the same directory through a name
    ],
)
def test_a_save_pretrained_on_the_main_process_read_back(sync_body, between, read, want):
    assert _codes(ACCEL_EXPORT.format(sync_body=sync_body, between=between, read=read)) == want


HELPERS = """
import os
import torch
import torch.distributed as dist
def save(sd, folder):
    torch.save(sd, os.path.join(folder, "model.pt"))
def load(folder):
    return torch.load(os.path.join(folder, {name}), map_location="cpu")
def main(sd, out):
    if dist.get_rank() == 0:
        {write}
    return {read}
"""


@pytest.mark.parametrize(
    ("write", "read", "name", "want"),
    [
        ("save(sd, out)", "load(out)", '"model.pt"', [(12, "FSD055")]),  # both through helpers given the directory
        ("save(sd, out)", "load(other)", '"model.pt"', []),
        ("save(sd, out)", "torch.load(os.path.join(out, 'model.pt'), map_location='cpu')", '"x"', [(12, "FSD055")]),
        ("torch.save(sd, os.path.join(out, 'model.pt'))", "load(out)", '"model.pt"', [(12, "FSD055")]),
        ("os.makedirs(out, exist_ok=True)", "load(out)", '"model.pt"', []),  # a read below a made directory: it was there
        ("os.makedirs(out, exist_ok=True)", "save(sd, out)", '"model.pt"', [(12, "FSD055")]),  # a write into it races
        ("print(out)", "load(out)", '"model.pt"', []),
    ],
)
def test_writes_and_reads_through_helpers_given_the_path(write, read, name, want):
    assert _codes(HELPERS.format(write=write, read=read, name=name)) == want


def test_the_barrier_only_in_the_else_branch_is_fsd003s():
    code = SAVE.format(between="pass", read="path").replace(
        "        torch.save(model.state_dict(), path)\n",
        "        torch.save(model.state_dict(), path)\n    else:\n        dist.barrier()\n",
    )
    assert (8, "FSD003") in _codes(code)


STOP = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
def {evaluate}(model, loader):
    total = sum(model.module(x).sum().item() for x in loader)
    {reduce}
    return total
def fit(net, loader, rank):
    model = DDP(net)
    for epoch in range(10):
        model(next(iter(loader))).sum().backward()
        {bind}
        if val < 0.1:
            break
"""


@pytest.mark.parametrize(
    ("evaluate", "reduce", "bind", "want"),
    [
        ("evaluate", "pass", "val = evaluate(model, loader)", [(15, "FSD058")]),
        ("evaluate", "dist.all_reduce(torch.tensor(total))", "val = evaluate(model, loader)", []),  # reduced inside
        ("prepare", "pass", "val = prepare(model, loader)", []),  # not named like an evaluation: the file cannot tell
        ("evaluate", "pass", "val = trainer.evaluate()", []),  # not a function of the file
        ("evaluate", "pass", "val = evaluate(model, loader) if rank == 0 else 1.0", [(15, "FSD058")]),
    ],
)
def test_early_stop_on_a_metric_each_rank_computed(evaluate, reduce, bind, want):
    assert [c for c in _codes(STOP.format(evaluate=evaluate, reduce=reduce, bind=bind)) if c[1] == "FSD058"] == want


def test_a_data_dependent_skip_under_join_is_not_reported():
    """Join shadows the collectives of the ranks that left (or skipped): the others do not hang."""
    code = NAN.format(test="batch is None").replace("    model = DDP(net)\n", "    model = DDP(net)\n    with Join([model]):\n")
    code = code.replace("\n    for batch", "\n     for batch").replace("\n        ", "\n         ")
    code = "from torch.distributed.algorithms.join import Join\n" + code
    assert _codes(code) == []
    assert _codes(NAN.format(test="batch is None")) == [(9, "FSD057")]


LOADER = """
from torch.utils.data import DataLoader, DistributedSampler
def build(ds):
    {build}
def train(ds, epochs):
    loader = build(ds)
    for epoch in range(epochs):
        {set_epoch}
        for batch in loader:
            print(batch)
"""


@pytest.mark.parametrize(
    ("build", "set_epoch", "want"),
    [
        ("return DataLoader(ds, sampler=DistributedSampler(ds))", "pass", [(6, "FSD059")]),
        ("s = DistributedSampler(ds)\n    dl = DataLoader(ds, sampler=s)\n    return dl", "pass", [(8, "FSD059")]),
        ("return DataLoader(ds, sampler=DistributedSampler(ds))", "loader.sampler.set_epoch(epoch)", []),
        ("return DataLoader(ds, sampler=DistributedSampler(ds, shuffle=False))", "pass", []),
        ("return DataLoader(ds, shuffle=True)", "pass", []),
    ],
)
def test_a_loader_returned_by_a_helper(build, set_epoch, want):
    assert _codes(LOADER.format(build=build, set_epoch=set_epoch)) == want


ACCUM = """
import contextlib
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
def train(net, loader, opt, k):
    model = DDP(net)
    for step, x in enumerate(loader):
        with model.no_sync() if {sync} else contextlib.nullcontext():
            model(x).sum().backward()
        if {step}:
            opt.step()
"""


@pytest.mark.parametrize(
    ("sync", "step", "want"),
    [
        ("step % k != 0", "(step + 1) % k == 0", [(11, "FSD060")]),
        ("(step + 1) % k != 0", "step % k == 0", [(11, "FSD060")]),
        ("(step + 1) % k != 0", "(step + 1) % k == 0", []),
        ("not (step % k == 0)", "step % k == 0", []),
        ("step % k != 0", "(step + 1) % other == 0", []),  # another modulus: the file does not show they disagree
        ("step < warmup", "(step + 1) % k == 0", []),
    ],
)
def test_no_sync_and_step_conditions(sync, step, want):
    assert _codes(ACCUM.format(sync=sync, step=step)) == want


NAMED = """
import torch
from contextlib import nullcontext
from torch.nn.parallel import DistributedDataParallel as DDP
def train(net, loader, opt, k, base):
    model = DDP(net)
    for i, x in enumerate(loader):
        {bind}
        with (nullcontext() if sync else model.no_sync()):
            model(x).sum().backward()
        if (i + 1) % k == 0:
            opt.step()
"""


@pytest.mark.parametrize(
    ("bind", "want"),
    [
        ("sync = i % k == 0", [(12, "FSD060")]),  # the test in a name
        ("sync = (i + 1) % k == 0", []),
        ("step = i + 1; sync = step % k == 0", []),  # the counter in a name: the same micro-batches
        ("step = i + 2; sync = step % k == 0", [(12, "FSD060")]),
        ("step = i + base; sync = step % k == 0", []),  # an offset the file does not show: another counter
        ("sync = not ((i + 1) % k != 0)", []),
    ],
)
def test_the_no_sync_condition_and_its_counter_through_names(bind, want):
    assert _codes(NAMED.format(bind=bind)) == want


LOSSES = """
class EmptyBatchError(ValueError):
    pass


def usable(batch):
    return bool((batch["mask"].sum(dim=1) > 4).any())


def masked_loss(model, batch):
    keep = batch["mask"].sum(dim=1) > 4
    if not keep.any():
        raise EmptyBatchError("no usable row")
    return model(batch["x"][keep]).mean()
"""

CKPT = """
from pathlib import Path

import torch
import torch.distributed as dist


class CheckpointManager:
    def __init__(self, root):
        self.root = Path(root)

    def load_extra(self, step):
        path = self.root / f"step_{{step}}" / "extra.pt"
        {decide}
        if {test}:
            box = [None]
            if dist.get_rank() == 0:
                box[0] = torch.load(path, weights_only=False)
            dist.broadcast_object_list(box, src=0)
            return box[0]
        return None
"""

TRAIN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from pkg.ckpt import CheckpointManager
from pkg.losses import EmptyBatchError, masked_loss, usable


def main(net, loader):
    dist.init_process_group("nccl")
    model = DDP(net.cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    CheckpointManager("/shared/ckpt").load_extra(100)
    for batch in loader:
{step}
        loss.backward()
        optimizer.step()
"""

EXCEPT_SKIP = """\
        try:
            loss = masked_loss(model, batch)
        except EmptyBatchError:
            continue"""

AGREED_SKIP = """\
        ok = torch.tensor(int(usable(batch)), device="cuda")
        dist.all_reduce(ok, op=dist.ReduceOp.MIN)
        if ok.item() == 0:
            continue
        loss = masked_loss(model, batch)"""


@pytest.mark.parametrize(
    ("decide", "test", "step", "want"),
    [
        ("pass", "path.exists()", EXCEPT_SKIP, {("pkg/ckpt.py", 15, "FSD056"), ("train.py", 19, "FSD057")}),
        (
            "seen = [path.exists() if dist.get_rank() == 0 else None]; dist.broadcast_object_list(seen, src=0)",
            "seen[0]",
            AGREED_SKIP,
            set(),
        ),
    ],
    ids=["bad", "good"],
)
def test_two_files_of_a_package(tmp_path, decide, test, step, want):
    """A package shape (blind25 12 / 23): the loss helper and its exception live in ``pkg/losses.py``, the checkpoint
    manager in ``pkg/ckpt.py``; the except-skip is found in train.py and the one-reader existence test in the
    manager's method; the skip agreed by all ranks and rank 0's broadcast answer are silent."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "losses.py").write_text(LOSSES)
    (tmp_path / "pkg" / "ckpt.py").write_text(CKPT.format(decide=decide, test=test))
    (tmp_path / "train.py").write_text(TRAIN.format(step=step))
    found = {(Path(f.path).relative_to(tmp_path).as_posix(), f.line, f.code) for f in check_paths([str(tmp_path)])}
    assert found == want


CLOCK_ON_AN_ATTRIBUTE = """
import time
from torch.nn.parallel import DistributedDataParallel as DDP

def train(model, loader, opt, state, total):
    model = DDP(model)
    last = time.time()
    for batch in loader:
        done = state.seen >= total
        now = time.time()
        state.elapsed += now - last
        {stop}
        model(batch).sum().backward()
        opt.step()
        state.seen += len(batch)
"""


@pytest.mark.parametrize(
    ("stop", "want"),
    [
        ("if done:\n            break", []),  # done reads state.seen: every rank's count, not the clock
        ("if state.elapsed > 3600:\n            break", [(13, "FSD058")]),  # the attribute the clock fed
    ],
    ids=["other-attribute", "clocked-attribute"],
)
def test_a_clock_fed_attribute_is_local_not_its_whole_object(stop, want):
    """`state.elapsed += time.time() - last` makes state.elapsed this rank's own value, not every attribute of
    `state` (a public training loop stopped on `state.cur_nimg >= stop` was reported as clocked)."""
    code = CLOCK_ON_AN_ATTRIBUTE.format(stop=stop)
    assert [c for c in _codes(code) if c[1] == "FSD058"] == want
