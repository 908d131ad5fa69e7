"""Gradient accumulation under DDP in the shapes real loops take, each deciding the no_sync() micro-batches and
the optimizer step on different ones: the condition kept in a variable (`sync = ...`) that picks the context, a
counter kept in another name (`step = i + 1`), and an accumulating arm that ends in `continue`. The step then runs
on gradients whose last micro-batch was never all-reduced, and the replicas drift apart."""

from contextlib import nullcontext

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train_epoch(model, loader, optimizer, accum):
    for i, batch in enumerate(loader):
        sync = i % accum == 0
        ctx = nullcontext() if sync else model.no_sync()
        with ctx:
            loss = model(batch).mean() / accum
            loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()  # <- FSD060
            optimizer.zero_grad()


class Trainer:
    def __init__(self, net, accum):
        self.model = DDP(net)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.accum = accum

    def fit(self, loader):
        for i, batch in enumerate(loader):
            step = i + 1
            if i % self.accum != 0:
                with self.model.no_sync():
                    self.model(batch).mean().backward()
                continue
            self.model(batch).mean().backward()
            if step % self.accum == 0:
                self.optimizer.step()  # <- FSD060
                self.optimizer.zero_grad()


def main(net, loader, accum):
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_epoch(model, loader, optimizer, accum)
