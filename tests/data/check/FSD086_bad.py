"""Validation over a DistributedSampler shard, its accuracy never reduced, used to pick the best checkpoint and
printed on rank 0: both are rank 0's shard only."""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def evaluate(model, loader, device):
    model.eval()
    correct, total = 0, 0
    with torch.no_grad():
        for x, y in loader:
            pred = model(x.to(device)).argmax(-1)
            correct += (pred == y.to(device)).sum().item()
            total += y.numel()
    return correct / max(total, 1)


def fit(model, optimizer, train_ds, val_ds, device, epochs):
    train_sampler = DistributedSampler(train_ds)
    train_loader = DataLoader(train_ds, batch_size=32, sampler=train_sampler)
    val_loader = DataLoader(val_ds, batch_size=64, sampler=DistributedSampler(val_ds, shuffle=False))
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
            print(f"epoch {epoch}: val acc {acc:.4f}")  # <- FSD086
        if acc > best_acc:
            best_acc = acc
            if dist.get_rank() == 0:
                torch.save(model.module.state_dict(), "best.pt")
