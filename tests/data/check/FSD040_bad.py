"""DDP gradient accumulation with the stepping micro-batch inside no_sync(): the gradients are never all-reduced."""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, accum=4):
    model = DDP(net)
    optimizer = torch.optim.AdamW(model.parameters())
    for i, (x, y) in enumerate(loader):
        with model.no_sync():
            loss = torch.nn.functional.mse_loss(model(x), y) / accum
            loss.backward()
            if (i + 1) % accum == 0:
                optimizer.step()  # <- FSD040
                optimizer.zero_grad()


def train_backward_only(net, loader):
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        with model.no_sync():  # <- FSD040
            loss.backward()
        optimizer.step()
