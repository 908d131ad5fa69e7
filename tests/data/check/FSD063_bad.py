"""The sampler gets the rank on this node: on two nodes both read the same half of the dataset."""

import os

from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build_loader(dataset, world_size):
    local_rank = int(os.environ["LOCAL_RANK"])
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=local_rank)  # <- FSD063
    return DataLoader(dataset, batch_size=32, sampler=sampler)
