"""A Trainer whose backward helper enters no_sync() (a conditional context bound to a name), while the forward ran
in the caller, before the helper: DDP already armed the all-reduce, so no_sync() saves nothing."""

import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, net, optimizer, accum):
        self.model = DDP(net)
        self.optimizer = optimizer
        self.accum = accum
        self.micro = 0

    def _backward(self, loss, boundary):
        ctx = self.model.no_sync() if not boundary else contextlib.nullcontext()
        with ctx:  # <- FSD046
            (loss / self.accum).backward()

    def train_step(self, x, y):
        boundary = (self.micro + 1) % self.accum == 0
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        self._backward(loss, boundary)
        if boundary:
            self.optimizer.step()
            self.optimizer.zero_grad()
        self.micro += 1
