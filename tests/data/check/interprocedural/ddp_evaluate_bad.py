"""A DDP model (BatchNorm buffers, broadcast_buffers=True by default) evaluated on rank 0 only through helpers: a
function given the wrapper, and a method reaching it through self.model. Each forward broadcasts the buffers from
rank 0 while the other ranks are already in the next collective."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, val_x):
    with torch.no_grad():
        return model(val_x).mean()


class Trainer:
    def __init__(self, model):
        self.model = model

    def validate(self, val_x):
        with torch.no_grad():
            return self.model(val_x).mean()

    def fit(self, loader, val_x):
        for x in loader:
            self.model(x).sum().backward()
            if dist.get_rank() == 0:
                print(self.validate(val_x))  # <- FSD045


def main(loader, val_x):
    dist.init_process_group("nccl")
    model = DDP(nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)).cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
        if dist.get_rank() == 0:
            print(evaluate(model, val_x))  # <- FSD045
        dist.barrier()
    Trainer(model).fit(loader, val_x)
