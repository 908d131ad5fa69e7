"""Trainer classes that build the optimizer in __init__ and wrap the model later, in setup() / shard(): __init__
runs first, so the optimizer holds the parameters FSDP1 flattens away (or that fully_shard replaces with DTensors)
and its step updates tensors the model no longer uses (forum threads on "FSDP loss does not go down" with a
trainer class). Also through a method returning the optimizer and nanoGPT's configure_optimizers."""

import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)  # <- FSD002

    def setup(self):
        self.model = FSDP(self.model, device_id=torch.cuda.current_device())

    def train_step(self, batch):
        loss = self.model(batch).sum()
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()


class ShardedTrainer:
    def __init__(self, model, lr):
        self.model = model
        self.lr = lr
        self.optimizer = self.build_optimizer()  # <- FSD001

    def build_optimizer(self):
        return torch.optim.AdamW(self.model.parameters(), lr=self.lr, fused=True)

    def shard(self):
        for block in self.model.layers:
            fully_shard(block)
        fully_shard(self.model)


class GPTTrainer:
    def __init__(self, model, config):
        self.model = model
        self.optimizer = self.model.configure_optimizers(config.weight_decay, config.lr, (0.9, 0.95), "cuda")  # <- FSD002

    def setup(self):
        self.model = FSDP(self.model, use_orig_params=True)
