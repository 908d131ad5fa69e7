"""The same accumulation with the sync and the step on the same micro-batch."""

import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, accum=4):
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        last = (step + 1) % accum == 0
        with model.no_sync() if (step + 1) % accum != 0 else contextlib.nullcontext():
            loss = torch.nn.functional.mse_loss(model(x), y) / accum
            loss.backward()
        if last:
            optimizer.step()
            optimizer.zero_grad()
