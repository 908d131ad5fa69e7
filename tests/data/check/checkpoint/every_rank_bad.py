"""FSD070 in a Trainer class and through a helper: the save runs on every rank of a DDP job."""
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint(model, optimizer, path):
    torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path)  # <- FSD070


class Trainer:
    def __init__(self, model, out_dir):
        self.model = DDP(model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.out_dir = out_dir

    def _save(self, epoch):
        path = os.path.join(self.out_dir, f"epoch_{epoch}.pt")
        torch.save(self.model.module.state_dict(), path)  # <- FSD070

    def fit(self, epochs):
        for epoch in range(epochs):
            self.optimizer.zero_grad()
            self.model(torch.randn(2, 4)).sum().backward()
            self.optimizer.step()
            self._save(epoch)
            save_checkpoint(self.model, self.optimizer, os.path.join(self.out_dir, "last.pt"))


def worker(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    Trainer(torch.nn.Linear(4, 4), "out").fit(2)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
