"""Wraps the model of model.py in DDP."""

import torch.distributed as dist
from model import Block
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("nccl")
    model = DDP(Block().cuda())
    return model
