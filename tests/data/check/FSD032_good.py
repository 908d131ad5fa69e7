import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 4))
    fully_shard(model)
    model.to_empty(device="cuda")
    for m in model:
        m.reset_parameters()
    return model


if __name__ == "__main__":
    main()
