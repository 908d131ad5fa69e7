import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main():
    model = nn.Linear(8, 8).to(torch.bfloat16)  # <- FSD020
    fully_shard(model)
    other = nn.Linear(8, 8)
    other.half()  # <- FSD020
    return FSDP(other)
