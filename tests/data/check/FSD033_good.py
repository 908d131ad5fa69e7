import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.fsdp import CPUOffloadPolicy


def main():
    model = nn.Linear(8, 8)
    fully_shard(model, offload_policy=CPUOffloadPolicy())
    ref = nn.Linear(8, 8)
    ref_optim = torch.optim.AdamW(ref.parameters(), lr=1e-3)  # not offloaded
    return torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True), ref_optim
