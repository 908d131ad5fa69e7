"""Near misses: the per-epoch helper called once (no epoch loop), the tuple's sampler element iterated instead of the
loader (not a loader), a starred unpacking, and a helper called in a loop that iterates another argument."""

import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def run_epoch(model, batches):
    for inputs in batches:
        model(inputs).sum().backward()


def loaders(dataset, batch_size):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    return loader, sampler


def once(model, dataset):
    sampler = DistributedSampler(dataset)
    batches = DataLoader(dataset, batch_size=8, sampler=sampler)
    run_epoch(model, batches)


def starred(model, dataset, epochs):
    *rest, last = loaders(dataset, 4)
    for _ in range(epochs):
        run_epoch(model, last)


def other_argument(model, dataset, chunks, epochs):
    loader, sampler = loaders(dataset, 4)
    for _ in range(epochs):
        run_epoch(model, chunks)
    return loader
