import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main(rank):
    model = FSDP(nn.Linear(8, 8).cuda())
    if rank == 0:
        torch.save(model.state_dict(), "model.pt")  # <- FSD006


def missing_keys(model):
    return set(model.state_dict())


def finetune(args):
    model = nn.Linear(8, 8)
    model = FSDP(model)
    if dist.get_rank() == 0:
        print(missing_keys(model))  # <- FSD006
        print(model.state_dict().keys())  # <- FSD006
