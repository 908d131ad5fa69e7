"""Early stopping with patience on each rank's own validation loss: the ranks can stop at different epochs."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, loader):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            total += torch.nn.functional.mse_loss(model.module(x), y, reduction="sum").item()
            count += len(x)
    model.train()
    return total / count


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
        val_loss = evaluate(model, val_loader)  # this rank's shard of the validation set
        if val_loss < best:
            best, bad_epochs = val_loss, 0
        else:
            bad_epochs += 1
        if bad_epochs >= patience:
            print(f"rank {os.environ.get('RANK')} stops at epoch {epoch}")
            break  # <- FSD058
    dist.destroy_process_group()


def evaluate_stats(model, loader):
    stats = torch.zeros(2)
    for x, y in loader:
        stats[0] += torch.nn.functional.mse_loss(model.module(x), y, reduction="sum")
        stats[1] += len(x)
    return stats


def main_reduced_late(net, train_loader, val_loader, patience=3):
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    bad_epochs = 0
    for epoch in range(100):
        for x, y in train_loader:
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        stats = evaluate_stats(model, val_loader)
        val_loss = (stats[0] / stats[1]).item()  # taken before the all_reduce: this rank's own
        dist.all_reduce(stats)
        if val_loss > 1.0:
            bad_epochs += 1
        if bad_epochs >= patience:
            break  # <- FSD058
