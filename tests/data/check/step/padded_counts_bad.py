"""FSD078 shapes: the evaluation sampler comes out of a helper that returns the datasets and samplers as a tuple,
and the loop counts into the elements of one tensor (``stats[0] += ...``) that is then all-reduced whole."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def build_data(train_set, val_set):
    train_sampler = DistributedSampler(train_set)
    val_sampler = DistributedSampler(val_set, shuffle=False)
    return train_sampler, val_sampler


def accuracy(model, loader, device):
    stats = torch.zeros(2, device=device)
    with torch.no_grad():
        for x, y in loader:
            pred = model(x.to(device)).argmax(-1)
            stats[0] += (pred == y.to(device)).sum()
            stats[1] += y.numel()
    dist.all_reduce(stats)  # <- FSD078
    return (stats[0] / stats[1]).item()


def run(model, train_set, val_set, device):
    train_sampler, val_sampler = build_data(train_set, val_set)
    val_loader = DataLoader(val_set, batch_size=16, sampler=val_sampler)
    return accuracy(model, val_loader, device)
