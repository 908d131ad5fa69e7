"""The trainer classes done right: the optimizer built after the wrap (in setup(), or in __init__ after it calls
the method that wraps), and a Lightning module whose configure_optimizers Lightning calls after configure_model."""

import lightning as L
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.lr = lr
        self.optimizer = None

    def setup(self):
        self.model = FSDP(self.model, device_id=torch.cuda.current_device())
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.lr)

    def train_step(self, batch):
        loss = self.model(batch).sum()
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()


class ShardedTrainer:
    def __init__(self, model, lr):
        self.model = model
        self.lr = lr
        self.shard()
        self.optimizer = self.build_optimizer()

    def build_optimizer(self):
        return torch.optim.AdamW(self.model.parameters(), lr=self.lr, fused=True)

    def shard(self):
        for block in self.model.layers:
            fully_shard(block)
        fully_shard(self.model)


class LitGPT(L.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def configure_model(self):
        for block in self.model.layers:
            fully_shard(block)
        fully_shard(self.model)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.model.parameters(), lr=3e-4)
