import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.fsdp import MixedPrecision, MixedPrecisionPolicy


def main():
    model = nn.Linear(8, 8)
    fully_shard(model, mp_policy=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32))  # <- FSD019
    other = nn.Linear(8, 8)
    fully_shard(other, sharding_strategy="FULL_SHARD")  # <- FSD019
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    return FSDP(nn.Linear(8, 8), mixed_precision=policy)  # <- FSD019
