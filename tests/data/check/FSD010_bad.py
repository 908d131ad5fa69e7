import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def train(x):
    rank = dist.get_rank()
    model = nn.Linear(8, 8)
    fully_shard(model)
    if rank == 0:
        with torch.no_grad():
            print(model(x).sum())  # <- FSD010
