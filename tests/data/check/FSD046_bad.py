"""DDP accumulation with only the backward inside no_sync(): the forward ran outside, so the backward still all-reduces."""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train_backward_only(net, loader):
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        with model.no_sync():  # <- FSD046
            loss.backward()
        optimizer.step()
