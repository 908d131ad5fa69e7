# Gradient accumulation by hand on a DDP model: the optimizer steps every `accum` micro-batches, but each
# micro-batch's backward still all-reduces the gradients (no no_sync()).
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, accum_steps=8):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.model = DDP(model.cuda(self.local_rank), device_ids=[self.local_rank])
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.accum_steps = accum_steps

    def _loss(self, x, y):
        return torch.nn.functional.cross_entropy(self.model(x), y) / self.accum_steps

    def train_epoch(self, loader):
        for step, (x, y) in enumerate(loader):
            loss = self._loss(x.cuda(self.local_rank), y.cuda(self.local_rank))
            loss.backward()  # <- FSD083
            if (step + 1) % self.accum_steps == 0:
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    try:
        data = torch.utils.data.TensorDataset(torch.randn(512, 32), torch.randint(0, 4, (512,)))
        sampler = torch.utils.data.DistributedSampler(data)
        Trainer(torch.nn.Linear(32, 4)).train_epoch(torch.utils.data.DataLoader(data, batch_size=16, sampler=sampler))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
