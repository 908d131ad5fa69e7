import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main():
    model = FSDP(nn.Linear(8, 8).cuda())
    scaler = torch.cuda.amp.GradScaler()  # <- FSD011
    return model, scaler
