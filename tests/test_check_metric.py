"""FSD086-FSD088 (``skill/core/check/metric_rules.py``): metrics and results of this rank's share of the data. The
marked fixtures are in ``tests/data/check/metric/`` (``test_check_marked.py``); these are the edges."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsdp_skill.core.check import check_source

DATA = Path(__file__).parent / "data" / "check"


def _codes(src: str, code: str) -> list[int]:
    return [f.line for f in check_source(src, "t.py") if f.code == code]


EVAL = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def evaluate(model, loader):
    hits = 0
    for x, y in loader:
        hits += (model(x).argmax(-1) == y).sum().item()
{tail}
    return hits


def main(model, ds):
    loader = DataLoader(ds, batch_size=8, sampler={sampler})
    best = 0
    acc = evaluate(model, loader)
{between}
    if acc > best:
        best = acc
"""


@pytest.mark.parametrize(
    ("tail", "sampler", "between", "want"),
    [
        ("", "DistributedSampler(ds)", "", [19]),
        ("", "None", "", []),  # every rank scores the whole set
        ("    hits = torch.tensor(hits); dist.all_reduce(hits)", "DistributedSampler(ds)", "", []),  # reduced inside
        ("", "DistributedSampler(ds)", "    acc = torch.tensor(acc); dist.all_reduce(acc)", []),  # rebound by the caller
        ("", "DistributedSampler(ds)", "    dist.all_reduce(torch.tensor([acc]))", []),  # handed to a collective
        ("    metric.compute()", "DistributedSampler(ds)", "", []),  # a metric object that syncs itself
    ],
)
def test_shard_metric_edges(tail, sampler, between, want):
    assert _codes(EVAL.format(tail=tail, sampler=sampler, between=between), "FSD086") == want


def test_shard_metric_message_names_the_function_loop_and_sampler():
    (f,) = [f for f in check_source((DATA / "FSD086_bad.py").read_text(), "t.py") if f.code == "FSD086"]
    assert "evaluate() (line 10)" in f.message and "loop at line 14" in f.message and "(line 24)" in f.message


LIGHTNING = """import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint


class M(L.LightningModule):
    def validation_step(self, batch, i):
        self.log("val_loss", self.loss(batch){extra})


trainer = L.Trainer({trainer}, callbacks=[ModelCheckpoint(monitor="{monitor}")])
"""


@pytest.mark.parametrize(
    ("extra", "trainer", "monitor", "want"),
    [
        ("", "devices=2", "val_loss", [7]),
        ("", "devices=-1", "val_loss", [7]),
        ("", 'strategy="fsdp"', "val_loss", [7]),
        ("", "num_nodes=2", "val_loss", [7]),
        (", sync_dist=True", "devices=2", "val_loss", []),
        (", sync_dist=args.sync", "devices=2", "val_loss", []),  # not a literal False: may be True
        (", rank_zero_only=True", "devices=2", "val_loss", []),
        ("", "devices=1", "val_loss", []),
        ("", "devices=args.devices", "val_loss", []),  # the file cannot tell
        ("", "devices=2", "val_acc", []),  # not the monitored metric
    ],
)
def test_monitored_metric_edges(extra, trainer, monitor, want):
    assert _codes(LIGHTNING.format(extra=extra, trainer=trainer, monitor=monitor), "FSD087") == want


def test_monitored_metric_silent_without_lightning():
    src = LIGHTNING.format(extra="", trainer="devices=2", monitor="val_loss").replace("lightning", "mylib")
    assert _codes(src, "FSD087") == []


GATHER = """import torch
import torch.distributed as dist


def f(logits, labels, world):
    t = {value}
    out = [torch.empty_like(t) for _ in range(world)]
{before}    dist.all_gather(out, t)
    return out
"""


@pytest.mark.parametrize(
    ("value", "before", "want"),
    [
        ("logits[labels != -100]", "", [8]),
        ("logits[(labels > 0) & (labels < 5)]", "", [8]),
        ("torch.masked_select(logits, labels > 0)", "", [8]),
        ("torch.where(labels > 0)[0]", "", []),  # a subscript of where's tuple: not followed
        ("labels.nonzero()", "", [8]),
        ("logits[:, : int(labels.sum())]", "", [8]),
        ("logits[:, :128]", "", []),
        ("logits[labels]", "", []),  # an index tensor: its size is the index's, the same on every rank
        ("logits[labels != -100]", "    dist.all_gather(sizes, torch.tensor([len(logits)]))\n", []),  # sizes first
    ],
)
def test_rank_sized_gather_edges(value, before, want):
    assert _codes(GATHER.format(value=value, before=before), "FSD088") == want


def test_all_gather_object_of_a_masked_selection_is_silent():
    src = "import torch.distributed as dist\n\ndef f(x, m, out):\n    dist.all_gather_object(out, x[m > 0])\n"
    assert _codes(src, "FSD088") == []


@pytest.mark.parametrize(
    ("use", "want"),
    [
        ('    if res["acc"] > best:\n        best = res["acc"]\n', [18]),
        ("    scheduler.step(res)\n", [18]),
        ("    optimizer.step()\n    print(res)\n", []),  # printed on every rank: each rank says its own
    ],
)
def test_shard_metric_uses(use, want):
    src = EVAL.format(tail="", sampler="DistributedSampler(ds)", between="").replace(
        "    acc = evaluate(model, loader)\n\n    if acc > best:\n        best = acc\n",
        "    res = evaluate(model, loader)\n" + use,
    )
    assert "res = evaluate" in src
    assert _codes(src, "FSD086") == want


def test_monitored_metric_silent_where_the_file_also_runs_a_single_process_trainer():
    src = LIGHTNING.format(extra="", trainer="devices=2", monitor="val_loss") + "other = L.Trainer(devices=1)\n"
    assert _codes(src, "FSD087") == []


def test_monitored_metric_needs_the_callback_given_to_the_trainer():
    src = (
        LIGHTNING.format(extra="", trainer="devices=2", monitor="val_loss").replace(
            'callbacks=[ModelCheckpoint(monitor="val_loss")]', "callbacks=[]"
        )
        + 'unused = ModelCheckpoint(monitor="val_loss")\n'
    )
    assert _codes(src, "FSD087") == []


COND = """import torch
import torch.distributed as dist


def f(boxes, world):
    kept = []
    for b in boxes:
        {line}
    t = torch.tensor(kept)
    out = [torch.empty_like(t) for _ in range(world)]
    dist.all_gather(out, t)
"""


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("if b.score > 0.5:\n            kept.append(b.score)", [12]),  # how many pass is the data's
        ("kept.append(b.score)", []),  # one per box: the boxes' count
        ("if dist.get_rank() == 0:\n            kept.append(b.score)", []),  # a rank test: other rules' business
    ],
)
def test_gather_of_a_list_appended_on_a_condition(line, want):
    assert _codes(COND.format(line=line), "FSD088") == want
