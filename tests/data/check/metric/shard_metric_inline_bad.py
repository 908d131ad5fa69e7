"""The evaluation loop written inline in the training function: the correct / total counts of this rank's shard
turned into an accuracy, printed on rank 0 and used to keep the best checkpoint, never all-reduced."""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def fit(model, val_ds, epochs):
    val_loader = DataLoader(val_ds, batch_size=64, sampler=DistributedSampler(val_ds, shuffle=False, drop_last=True))
    best = 0.0
    for epoch in range(epochs):
        correct, total = 0, 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(-1) == y).sum().item()
                total += y.numel()
        acc = correct / total
        if dist.get_rank() == 0:
            print(epoch, acc)  # <- FSD086
        if acc > best:
            best = acc
