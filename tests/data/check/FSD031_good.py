import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main():
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 4))
    for p in model[0].parameters():
        p.requires_grad = False
    return FSDP(model, use_orig_params=True)


def freeze_elsewhere():
    model = nn.Linear(8, 8)
    model.weight.requires_grad = False
    return model


def wrap(model, **kwargs):
    return FSDP(model, **kwargs)  # another function's model; kwargs may carry use_orig_params
