"""Helpers called on rank 0 with a module that is not wrapped (an EMA copy, a plain model): nothing to report."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard


def evaluate(model, batch):
    with torch.no_grad():
        return model(batch).mean()


def main(net, ema, batch):
    fully_shard(net)
    net(batch).mean().backward()
    if dist.get_rank() == 0:
        print(evaluate(ema, batch))
        torch.save(ema.state_dict(), "ema.pt")
