"""A torchrun script that binds the GPU with the global rank (pytorch forum / issues: "CUDA error: invalid device
ordinal" on the second node, where RANK is 8..15 but each node has 8 GPUs)."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank)  # <- FSD042
    return rank


def main():
    rank = setup()
    world_rank = int(os.environ["RANK"])
    device = torch.device(f"cuda:{world_rank}")  # <- FSD042
    model = nn.Linear(8, 8).to(device)
    model = DDP(model, device_ids=[world_rank])  # <- FSD042
    model(torch.randn(4, 8).cuda(rank))  # <- FSD042 (rank: what setup() returns, the global rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
