"""The Trainer class with a DistributedSampler, and the validation loader without one (no backward)."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model, train_set, val_set, args):
        self.model = FSDP(model, device_id=torch.cuda.current_device())
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.lr)
        self.sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)
        self.train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=self.sampler, pin_memory=True)
        self.val_loader = DataLoader(val_set, batch_size=args.batch_size)
        self.epochs = args.epochs

    def train_step(self, batch):
        loss = self.model(**batch).loss
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss.detach()

    def fit(self):
        for epoch in range(self.epochs):
            self.sampler.set_epoch(epoch)
            for batch in self.train_loader:
                self.train_step(batch)
            with torch.no_grad():
                for batch in self.val_loader:
                    self.model(**batch)
        dist.barrier()
