"""The loader iterated once per call by a training function that the epoch loop calls (the commonest shape of a
training script), and a builder that returns the loader with its sampler as a tuple."""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def run_epoch(model, batches, optimizer):
    for inputs, targets in batches:
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def fit(model, dataset, optimizer, epochs):
    sampler = DistributedSampler(dataset, shuffle=True)  # <- FSD035
    batches = DataLoader(dataset, batch_size=32, sampler=sampler)
    for _ in range(epochs):
        run_epoch(model, batches, optimizer)


def loaders(dataset, batch_size):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    return loader, sampler


def main(model, dataset, epochs):
    dist.init_process_group("gloo")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    fit(model, dataset, optimizer, epochs)
    train_loader, train_sampler = loaders(dataset, 16)  # <- FSD059
    epoch = 0
    while epoch < epochs:
        run_epoch(model, train_loader, optimizer)
        epoch += 1
    dist.destroy_process_group()
