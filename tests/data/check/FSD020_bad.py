import torch
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main():
    model = nn.Linear(8, 8).to(torch.bfloat16)  # <- FSD020
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters())
    other = nn.Linear(8, 8)
    other.half()  # <- FSD020
    wrapped = FSDP(other)
    opt2 = torch.optim.SGD(wrapped.parameters(), lr=0.1)
    return opt, opt2
