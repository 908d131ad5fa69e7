"""DDP gradient accumulation where the synchronising micro-batch and the stepping one are off by one."""

import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, accum=4):
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        ctx = model.no_sync() if step % accum != 0 else contextlib.nullcontext()
        with model.no_sync() if step % accum != 0 else contextlib.nullcontext():
            loss = torch.nn.functional.mse_loss(model(x), y) / accum
            loss.backward()
        if (step + 1) % accum == 0:
            optimizer.step()  # <- FSD060
            optimizer.zero_grad()
        del ctx
