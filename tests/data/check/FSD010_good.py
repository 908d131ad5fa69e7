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
    with torch.no_grad():
        out = model(x).sum()
    if rank == 0:
        print(out)
    reference = nn.Linear(8, 8)
    if rank == 0:
        print(reference(x))  # a plain module
