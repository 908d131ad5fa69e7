import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def log(model):
    if dist.get_rank() == 0:
        print(model.weight.full_tensor().norm())  # <- FSD007
