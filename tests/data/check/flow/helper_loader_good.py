"""The same script with shuffle=False (an evaluation loader) and one iteration only (no epoch loop)."""

import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_eval_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset, shuffle=False))


def get_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset))


def evaluate(model, dataset, epochs):
    loader = get_eval_loader(dataset, 16)
    for _ in range(epochs):
        for x in loader:
            model(x)


def one_pass(model, dataset):
    loader = get_loader(dataset, 16)
    with torch.no_grad():
        for x in loader:
            model(x)
