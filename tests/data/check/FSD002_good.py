import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard

from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    model = FSDP(nn.Linear(8, 8).cuda(), use_orig_params=True)
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    return model, optim


def ddp():
    model = nn.Linear(8, 8)
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)  # DDP keeps the parameter objects
    model = DDP(model)
    return model, optim
