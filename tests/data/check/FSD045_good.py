"""Rank-0-only evaluation through model.module (no collective), evaluation through the wrapper on every rank, and
a wrapper built with broadcast_buffers=False."""

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
                print(model.module(val_x).mean())
        with torch.no_grad():
            out = model(val_x)  # every rank
        if dist.get_rank() == 0:
            print(out.mean())
        dist.barrier()


def train_no_buffer_sync(loader, val_x):
    model = DDP(nn.Linear(8, 8), broadcast_buffers=False)
    for x in loader:
        model(x).sum().backward()
    if dist.get_rank() == 0:
        print(model(val_x))
