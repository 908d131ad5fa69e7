"""A DistributedSampler and shuffle=True given to the same DataLoader: the constructor raises ValueError."""

import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build_loader(dataset, batch_size):
    sampler = DistributedSampler(dataset, num_replicas=dist.get_world_size(), rank=dist.get_rank())
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, shuffle=True)  # <- FSD062
