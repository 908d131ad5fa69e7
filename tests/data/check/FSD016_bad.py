import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main(rank):
    model = nn.Linear(8, 8)
    fully_shard(model)
    sd = model.state_dict()
    if rank == 0:
        torch.save(sd, "model.pt")  # <- FSD016
