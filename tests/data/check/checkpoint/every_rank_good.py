"""FSD070 near-misses: the save guarded at its call, after an early return of the other ranks, with
@rank_zero_only, to a per-rank path, through save_pretrained(is_main_process=...), DCP on every rank, a helper
the file never calls (its caller elsewhere may guard it)."""
import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def rank_zero_only(fn):
    return fn


def save_checkpoint(model, optimizer, path):
    torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path)


def export(model, path):
    torch.save(model.state_dict(), path)


@rank_zero_only
def save_best(model, path):
    torch.save(model.module.state_dict(), path)


class Trainer:
    def __init__(self, model, out_dir, hf_model=None):
        self.model = DDP(model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.out_dir = out_dir
        self.hf_model = hf_model

    def _save(self, epoch):
        if dist.get_rank() != 0:
            return
        path = os.path.join(self.out_dir, f"epoch_{epoch}.pt")
        torch.save(self.model.module.state_dict(), path)

    def fit(self, epochs):
        for epoch in range(epochs):
            self.optimizer.zero_grad()
            self.model(torch.randn(2, 4)).sum().backward()
            self.optimizer.step()
            self._save(epoch)
            if dist.get_rank() == 0:
                save_checkpoint(self.model, self.optimizer, os.path.join(self.out_dir, "last.pt"))
            save_best(self.model, os.path.join(self.out_dir, "best.pt"))
            torch.save(self.optimizer.state_dict(), os.path.join(self.out_dir, f"optim_{dist.get_rank()}.pt"))
            dcp.save({"model": self.model.state_dict()}, checkpoint_id=os.path.join(self.out_dir, "dcp"))
            if self.hf_model is not None:
                self.hf_model.save_pretrained(self.out_dir, is_main_process=dist.get_rank() == 0)


def worker(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    Trainer(torch.nn.Linear(4, 4), "out").fit(2)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
