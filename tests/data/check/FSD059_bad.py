"""A helper builds the loader with its DistributedSampler; the epoch loop never calls set_epoch."""

import torch
from torch.utils.data import DataLoader, DistributedSampler


def build_loader(dataset, batch_size):
    sampler = DistributedSampler(dataset, shuffle=True)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, drop_last=True)


def train(model, dataset, optimizer, epochs):
    loader = build_loader(dataset, 32)  # <- FSD059
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
