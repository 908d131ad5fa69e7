import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict


def main(rank):
    model = nn.Linear(8, 8)
    fully_shard(model)
    sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if rank == 0:
        torch.save(sd, "model.pt")


def per_rank(rank):
    model = nn.Linear(8, 8)
    fully_shard(model)
    torch.save(model.state_dict(), f"shard_rank{rank}.pt")  # each rank keeps its own shard on purpose
