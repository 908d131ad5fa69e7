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

