import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def train(batches):
    model = nn.Linear(8, 8)
    fully_shard(model)
    model.set_requires_gradient_sync(False)
    model(batches[0]).sum().backward()
    model.set_requires_gradient_sync(True)
    model(batches[1]).sum().backward()
    legacy = FSDP(nn.Linear(8, 8))
    with legacy.no_sync():
        legacy(batches[0]).sum().backward()
