"""The caller compares the sharded evaluation's raw result with the best before reducing it (the reduction comes
too late), and prints a second sharded result on rank 0 without reducing it."""

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
    if loss < best_loss:  # <- FSD086
        best_loss = reduce_mean(loss)
    full = evaluate(model, whole)
    if dist.get_rank() == 0:
        print("whole-set loss", full.item())
    val = evaluate(model, sharded)
    if dist.get_rank() == 0:
        print("val", val.item())  # <- FSD086
