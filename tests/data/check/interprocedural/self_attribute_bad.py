"""The wrapped module held in ``self.model`` (given to ``__init__``), used across methods: ``validate()`` on rank 0
runs its forward (FSD010), ``save()`` takes its FSDP1 state dict on rank 0 (FSD006)."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class Trainer:
    def __init__(self, model, rank):
        self.model = model
        self.rank = rank

    def validate(self, batch):
        with torch.no_grad():
            return self.model(batch).mean().item()

    def save(self, path):
        if self.rank == 0:
            torch.save(self.model.state_dict(), path)  # <- FSD006

    def train_epoch(self, batches):
        for batch in batches:
            self.model(batch).mean().backward()
        if self.rank == 0:
            print(self.validate(batches[0]))  # <- FSD010


def main(net):
    dist.init_process_group("nccl")
    trainer = Trainer(FSDP(net), dist.get_rank())
    trainer.train_epoch([torch.randn(4, 8)])
    trainer.save("model.pt")
