"""The evaluation returns this rank's sums and the caller all-reduces them before comparing (through a helper
of the file that runs the collective), and an evaluation over an unsharded loader (every rank scores the whole set)
is everybody's value."""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def reduce_mean(t):
    t = t.clone()
    dist.all_reduce(t)
    return t / dist.get_world_size()


def evaluate(model, loader):
    total = torch.zeros(())
    for x, y in loader:
        total += torch.nn.functional.mse_loss(model(x), y)
    return total / len(loader)


def main(model, val_ds):
    sharded = DataLoader(val_ds, batch_size=8, sampler=DistributedSampler(val_ds, shuffle=False))
    whole = DataLoader(val_ds, batch_size=8)
    best_loss = float("inf")
    loss = evaluate(model, sharded)
    loss = reduce_mean(loss)
    if loss < best_loss:
        best_loss = loss
    full = evaluate(model, whole)
    if dist.get_rank() == 0:
        print("whole-set loss", full.item())
    val = evaluate(model, sharded)
    mean = reduce_mean(val)
    if dist.get_rank() == 0:
        print("val", mean.item())
