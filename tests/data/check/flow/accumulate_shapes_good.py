"""The same accumulation loops deciding no_sync() and the step on the same micro-batches: the variable used for
both, the other counter name agreeing with the test that picks the context."""

from contextlib import nullcontext

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train_epoch(model, loader, optimizer, accum):
    for i, batch in enumerate(loader):
        sync = (i + 1) % accum == 0
        ctx = nullcontext() if sync else model.no_sync()
        with ctx:
            loss = model(batch).mean() / accum
            loss.backward()
        if sync:
            optimizer.step()
            optimizer.zero_grad()


class Trainer:
    def __init__(self, net, accum):
        self.model = DDP(net)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.accum = accum

    def fit(self, loader):
        for i, batch in enumerate(loader):
            step = i + 1
            if step % self.accum != 0:
                with self.model.no_sync():
                    self.model(batch).mean().backward()
                continue
            self.model(batch).mean().backward()
            if step % self.accum == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()


def main(net, loader, accum):
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_epoch(model, loader, optimizer, accum)
