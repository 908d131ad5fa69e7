"""A Trainer method accumulating with an if/else around no_sync(), stepping on another condition."""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, net, accum_steps):
        self.model = DDP(net)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.accum_steps = accum_steps

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            if i % self.accum_steps != 0:
                with self.model.no_sync():
                    self.model(batch).mean().backward()
            else:
                self.model(batch).mean().backward()
            if (i + 1) % self.accum_steps == 0:
                self.optimizer.step()  # <- FSD060
                self.optimizer.zero_grad()
