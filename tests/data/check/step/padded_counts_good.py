"""FSD078 near-miss, one edit from padded_counts_bad.py: the evaluation sampler drops the uneven tail
(drop_last=True) instead of repeating samples, so the element-wise counts hold each sample once."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def build_data(train_set, val_set):
    train_sampler = DistributedSampler(train_set)
    val_sampler = DistributedSampler(val_set, shuffle=False, drop_last=True)
    return train_sampler, val_sampler


def accuracy(model, loader, device):
    stats = torch.zeros(2, device=device)
    with torch.no_grad():
        for x, y in loader:
            pred = model(x.to(device)).argmax(-1)
            stats[0] += (pred == y.to(device)).sum()
            stats[1] += y.numel()
    dist.all_reduce(stats)
    return (stats[0] / stats[1]).item()


def run(model, train_set, val_set, device):
    train_sampler, val_sampler = build_data(train_set, val_set)
    val_loader = DataLoader(val_set, batch_size=16, sampler=val_sampler)
    return accuracy(model, val_loader, device)
