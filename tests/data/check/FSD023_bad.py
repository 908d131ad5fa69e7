import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.algorithms import Join


def train(batches):
    model = nn.Linear(8, 8)
    fully_shard(model)
    with Join([model]):  # <- FSD023
        for x in batches:
            model(x).sum().backward()
