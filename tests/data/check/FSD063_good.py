"""The defaults (world size and global rank of the process group), or both written out from the environment."""

import os

from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build_loader(dataset):
    sampler = DistributedSampler(dataset)
    return DataLoader(dataset, batch_size=32, sampler=sampler)


def build_loader_env(dataset):
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    return DataLoader(dataset, batch_size=32, sampler=sampler, pin_memory_device=f"cuda:{local_rank}")
