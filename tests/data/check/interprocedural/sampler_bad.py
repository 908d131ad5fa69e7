"""DistributedSampler idioms with no set_epoch: built inline in the DataLoader call, returned by a helper, and a
loader re-iterated inside a generator (every epoch sees the same order)."""

import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def make_sampler(dataset):
    return DistributedSampler(dataset, shuffle=True)


def forever(loader):
    while True:
        for batch in loader:
            yield batch


def train(dataset, epochs, step):
    dist.init_process_group("nccl")
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))  # <- FSD035
    for _ in range(epochs):
        for batch in loader:
            step(batch)
    sampler = make_sampler(dataset)  # <- FSD035
    other = DataLoader(dataset, sampler=sampler)
    for _ in range(epochs):
        for batch in other:
            step(batch)
    stream = DataLoader(dataset, sampler=DistributedSampler(dataset))  # <- FSD035
    batches = forever(stream)
    for _ in range(1000):
        step(next(batches))
