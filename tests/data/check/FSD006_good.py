import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.fsdp import FullStateDictConfig, StateDictType


def main(rank):
    model = FSDP(nn.Linear(8, 8).cuda())
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        sd = model.state_dict()
    if rank == 0:
        torch.save(sd, "model.pt")
    plain = nn.Linear(8, 8)
    if rank == 0:
        torch.save(plain.state_dict(), "plain.pt")  # not an FSDP module
