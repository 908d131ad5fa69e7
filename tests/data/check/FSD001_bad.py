import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main():
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 4))
    params = list(model.parameters())
    optim = torch.optim.AdamW(params, lr=1e-3)  # <- FSD001
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    return optim


def per_block():
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 4))
    optim = torch.optim.SGD(model[0].parameters(), lr=0.1)  # <- FSD001
    fully_shard(model[0])
    return optim
