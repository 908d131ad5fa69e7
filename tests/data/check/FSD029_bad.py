import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module


def main(dp_mesh, tp_mesh):
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 4))
    for block in model:
        fully_shard(block, mesh=dp_mesh)
    fully_shard(model, mesh=dp_mesh)
    parallelize_module(model[0], tp_mesh, ColwiseParallel())  # <- FSD029
