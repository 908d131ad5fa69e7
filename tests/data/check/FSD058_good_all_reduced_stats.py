"""The early-stop metric is rebuilt from a stats tensor every rank all-reduced first (the evaluation sums loss and
count on its shard, ``dist.all_reduce(stats)``, then ``val_loss = stats[0] / stats[1]``): every rank holds the same
value and stops at the same epoch."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, loader):
    model.eval()
    stats = torch.zeros(2)
    with torch.no_grad():
        for x, y in loader:
            stats[0] += torch.nn.functional.mse_loss(model.module(x), y, reduction="sum")
            stats[1] += len(x)
    model.train()
    return stats


def main(net, train_loader, val_loader, epochs=100, patience=3):
    dist.init_process_group("gloo")
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    best, bad_epochs = float("inf"), 0
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        stats = evaluate(model, val_loader)  # this rank's shard
        dist.all_reduce(stats)  # summed over the ranks
        val_loss = (stats[0] / stats[1]).item()
        if val_loss < best:
            best, bad_epochs = val_loss, 0
        else:
            bad_epochs += 1
        if bad_epochs >= patience:
            break
    dist.destroy_process_group()
