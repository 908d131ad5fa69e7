"""The same helpers used right: rank 0 evaluates the inner module (model.module: no DDP forward, no broadcast), and
the wrapper itself is evaluated on every rank."""

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
            score = self.validate(val_x)  # every rank
            if dist.get_rank() == 0:
                print(score)


def main(loader, val_x):
    dist.init_process_group("nccl")
    model = DDP(nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)).cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
        if dist.get_rank() == 0:
            print(evaluate(model.module, val_x))  # the inner module: no DDP forward
        print(evaluate(model, val_x))  # the wrapper, on every rank
        dist.barrier()
    Trainer(model).fit(loader, val_x)
