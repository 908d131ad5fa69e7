import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main():
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 4))
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return optim


def rebound():
    model = nn.Linear(8, 8)
    optim = torch.optim.SGD(model.parameters(), lr=0.1)  # a different model than the one sharded below
    model = nn.Linear(8, 4)
    fully_shard(model)
    return optim


def either(use_fsdp):
    model = nn.Linear(8, 8)
    if use_fsdp:
        fully_shard(model)
    else:
        optim = torch.optim.SGD(model.parameters(), lr=0.1)
        return optim
