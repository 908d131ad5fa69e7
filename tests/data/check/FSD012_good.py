import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def step(x):
    model = FSDP(nn.Linear(8, 8).cuda())
    model(x).sum().backward()
    model.clip_grad_norm_(1.0)
    model2 = nn.Linear(8, 8)
    fully_shard(model2)
    torch.nn.utils.clip_grad_norm_(model2.parameters(), 1.0)  # FSDP2: DTensor gradients, global norm
