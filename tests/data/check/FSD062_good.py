"""shuffle belongs to the sampler; shuffle=True alone (no sampler) is the single-process case."""

import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build_loader(dataset, batch_size):
    if dist.is_initialized():
        sampler = DistributedSampler(dataset, shuffle=True)
        return DataLoader(dataset, batch_size=batch_size, sampler=sampler, shuffle=False)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True)
