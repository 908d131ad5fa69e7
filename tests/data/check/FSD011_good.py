import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler


def main():
    model = FSDP(nn.Linear(8, 8).cuda())
    scaler = ShardedGradScaler()
    return model, scaler


def bf16():
    scaler = torch.amp.GradScaler("cuda", enabled=False)  # bf16 run: the scaler is off
    return scaler
