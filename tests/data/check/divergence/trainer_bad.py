"""A Trainer class: the wrapper lives in self.model, the loop and the evaluation are methods."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, net, loader, accum=2):
        self.rank = dist.get_rank()
        self.model = DDP(net)
        self.optimizer = torch.optim.AdamW(self.model.parameters())
        self.loader, self.accum = loader, accum
        self.best = float("inf")

    def evaluate(self, batch):
        x, y = batch
        with torch.no_grad():
            return torch.nn.functional.mse_loss(self.model(x), y).item()

    def train_step(self, i, batch):
        x, y = batch
        with self.model.no_sync():
            loss = torch.nn.functional.mse_loss(self.model(x), y) / self.accum
            loss.backward()
            if (i + 1) % self.accum == 0:
                self.optimizer.step()  # <- FSD040
                self.optimizer.zero_grad()

    def fit(self, epochs, val_batch):
        for epoch in range(epochs):
            for i, batch in enumerate(self.loader):
                self.train_step(i, batch)
            if self.rank == 0:
                val = self.evaluate(val_batch)  # <- FSD045
                if val > self.best:
                    break  # <- FSD037
                self.best = val
