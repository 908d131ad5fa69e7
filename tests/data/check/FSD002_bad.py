import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main():
    model = nn.Linear(8, 8).cuda()
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)  # <- FSD002
    model = FSDP(model, use_orig_params=True)
    return model, optim
