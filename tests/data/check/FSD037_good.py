"""Early stopping decided on every rank: rank 0's verdict is broadcast, then all ranks leave together; a rank-0-only
`continue` after the synchronised work of the iteration skips only logging."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, optimizer, patience=3):
    rank = dist.get_rank()
    model = DDP(net)
    best, bad_epochs = float("inf"), 0
    for epoch in range(100):
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            if rank != 0:
                continue
            print(step, loss.item())
        stop = torch.zeros(1)
        if rank == 0:
            val = loss.item()
            bad_epochs = 0 if val < best else bad_epochs + 1
            best = min(best, val)
            stop.fill_(float(bad_epochs >= patience))
        dist.broadcast(stop, src=0)
        if stop.item():
            break
        if rank == 0:
            for name in ("a", "b"):
                if name == "b":
                    break  # leaves a loop that only rank 0 runs
