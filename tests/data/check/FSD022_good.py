import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main():
    model = nn.Linear(8, 8)
    fully_shard(model)
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda p: None)
    plain = nn.Linear(8, 8)
    for p in plain.parameters():
        p.register_hook(lambda g: g * 2)
