import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def train(model, batches):
    fully_shard(model)
    for i, x in enumerate(batches):
        model.set_requires_gradient_sync(i == len(batches) - 1)
        model(x).sum().backward()
