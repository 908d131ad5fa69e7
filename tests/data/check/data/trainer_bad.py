"""A Trainer class: the loader and the wrapper kept in self. attributes, the loop in a method."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, train_set, args):
        self.model = FSDP(model, device_id=torch.cuda.current_device())
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.lr)
        self.train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, pin_memory=True)  # <- FSD061
        self.epochs = args.epochs

    def train_step(self, batch):
        loss = self.model(**batch).loss
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss.detach()

    def fit(self):
        for epoch in range(self.epochs):
            for batch in self.train_loader:
                self.train_step(batch)
        dist.barrier()
