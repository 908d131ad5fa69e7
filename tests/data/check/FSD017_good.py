import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.fsdp import StateDictType


def main():
    model = FSDP(nn.Linear(8, 8).cuda())
    optim = torch.optim.Adam(model.parameters())
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        osd = FSDP.optim_state_dict(model, optim)
    torch.save(osd, "optim.pt")
