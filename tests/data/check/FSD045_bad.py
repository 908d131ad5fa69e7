"""Rank-0-only evaluation through the DDP wrapper: its forward broadcasts the BatchNorm buffers from rank 0."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train(loader, val_x):
    model = DDP(nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
        if dist.get_rank() == 0:
            with torch.no_grad():
                print(model(val_x).mean())  # <- FSD045
        dist.barrier()


def predict(model, x):
    return model(x).argmax(-1)


def evaluate(model, loader):
    return sum((predict(model, x) == y).sum() for x, y in loader)


def train_and_evaluate(loader, val_loader):
    model = DDP(nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)))
    print(evaluate(model.module, val_loader))
    if dist.get_rank() == 0:
        print(evaluate(model, val_loader))  # <- FSD045
        print(evaluate(loader=val_loader, model=model))  # <- FSD045
