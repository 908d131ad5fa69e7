"""The same validation done right: the correct and total counts are all-reduced before the ratio, so every rank
compares and prints the accuracy over the validation set (drop_last=True on the sampler: no repeated sample is
counted twice in the sums, FSD078's point)."""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def evaluate(model, loader, device):
    model.eval()
    stats = torch.zeros(2, device=device)
    with torch.no_grad():
        for x, y in loader:
            pred = model(x.to(device)).argmax(-1)
            stats[0] += (pred == y.to(device)).sum()
            stats[1] += y.numel()
    dist.all_reduce(stats)
    return (stats[0] / stats[1].clamp(min=1)).item()


def fit(model, optimizer, train_ds, val_ds, device, epochs):
    train_sampler = DistributedSampler(train_ds)
    train_loader = DataLoader(train_ds, batch_size=32, sampler=train_sampler)
    val_loader = DataLoader(val_ds, batch_size=64, sampler=DistributedSampler(val_ds, shuffle=False, drop_last=True))
    best_acc = 0.0
    for epoch in range(epochs):
        train_sampler.set_epoch(epoch)
        for x, y in train_loader:
            loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        acc = evaluate(model, val_loader, device)
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: val acc {acc:.4f}")
        if acc > best_acc:
            best_acc = acc
            if dist.get_rank() == 0:
                torch.save(model.module.state_dict(), "best.pt")
