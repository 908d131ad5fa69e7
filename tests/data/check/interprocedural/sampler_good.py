"""The same idioms where the order cannot repeat: no shuffling, one pass only, a generator that iterates once."""

import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def make_sampler(dataset):
    return DistributedSampler(dataset, shuffle=True)


def once(loader):
    for batch in loader:
        yield batch


def evaluate(dataset, step):
    dist.init_process_group("nccl")
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, shuffle=False))
    for _ in range(3):
        for batch in loader:
            step(batch)
    sampler = make_sampler(dataset)
    single = DataLoader(dataset, sampler=sampler)
    for batch in single:
        step(batch)
    stream = DataLoader(dataset, sampler=DistributedSampler(dataset))
    for batch in once(stream):
        step(batch)
