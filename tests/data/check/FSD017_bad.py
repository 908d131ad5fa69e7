import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main():
    model = FSDP(nn.Linear(8, 8).cuda())
    optim = torch.optim.Adam(model.parameters())
    torch.save(optim.state_dict(), "optim.pt")  # <- FSD017
