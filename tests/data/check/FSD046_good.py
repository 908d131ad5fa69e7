"""DDP gradient accumulation done right (FSD046 stays silent): forward and backward of the first micro-batches inside no_sync(), the
last one (and the step) outside it."""

import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, accum=4):
    model = DDP(net)
    optimizer = torch.optim.AdamW(model.parameters())
    for i, (x, y) in enumerate(loader):
        last = (i + 1) % accum == 0
        with model.no_sync() if not last else contextlib.nullcontext():
            loss = torch.nn.functional.mse_loss(model(x), y) / accum
            loss.backward()
        if last:
            optimizer.step()
            optimizer.zero_grad()


def train_explicit(net, micro_batches):
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with model.no_sync():
        for x, y in micro_batches[:-1]:
            torch.nn.functional.mse_loss(model(x), y).backward()
    x, y = micro_batches[-1]
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
