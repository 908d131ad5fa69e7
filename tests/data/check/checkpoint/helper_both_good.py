# A trainer whose save helper is rank-guarded at both calls: only rank 0 writes.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, save_dir):
        dist.init_process_group("nccl")
        self.rank = dist.get_rank()
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        self.model = DDP(torch.nn.Linear(8, 8).cuda(), device_ids=[local_rank])
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.save_dir = save_dir
        self.best = float("inf")

    def _save(self, tag):
        path = os.path.join(self.save_dir, f"checkpoint_{tag}.pt")
        torch.save({"model": self.model.module.state_dict(), "optimizer": self.optimizer.state_dict()}, path)

    def _step(self):
        loss = self.model(torch.randn(4, 8, device="cuda")).pow(2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def fit(self, epochs):
        try:
            for _ in range(epochs):
                loss = self._step()
                if loss < self.best:
                    self.best = loss
                    if self.rank == 0:
                        self._save("best")
                if self.rank == 0:
                    self._save("last")
        finally:
            dist.destroy_process_group()


if __name__ == "__main__":
    Trainer("/tmp/ckpt").fit(3)
