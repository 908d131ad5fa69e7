"""Early stopping decided on rank 0 only: rank 0 leaves the loop, the others wait in the next all-reduce."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, optimizer, patience=3):
    rank = dist.get_rank()
    model = DDP(net)
    best, bad_epochs = float("inf"), 0
    for epoch in range(100):
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        if rank == 0:
            val = loss.item()
            bad_epochs = 0 if val < best else bad_epochs + 1
            best = min(best, val)
            if bad_epochs >= patience:
                print("early stop")
                break  # <- FSD037
