import contextlib
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model, optim, loader, sampler, accum_grad=4, device="cuda"):
        self.model = model
        self.optim = optim
        self.loader = loader
        self.sampler = sampler
        self.accum_grad = accum_grad
        self.device = device

    def sync_context(self, batch_idx):
        if batch_idx % self.accum_grad != 0:
            return self.model.no_sync()
        return contextlib.nullcontext()

    def train_epoch(self, epoch):
        self.sampler.set_epoch(epoch)
        self.model.train()
        for batch_idx, (feats, target) in enumerate(self.loader):
            feats, target = feats.to(self.device), target.to(self.device)
            with self.sync_context(batch_idx):
                out = self.model(feats)
                loss = nn.functional.cross_entropy(out, target) / self.accum_grad
                loss.backward()
            if (batch_idx + 1) % self.accum_grad == 0:
                nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
                self.optim.step()
                self.optim.zero_grad()


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    ds = TensorDataset(torch.randn(8192, 80), torch.randint(0, 100, (8192,)))
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=32, sampler=sampler, drop_last=True)
    net = nn.Sequential(nn.Linear(80, 512), nn.ReLU(), nn.Linear(512, 100)).to(device)
    model = DDP(net, device_ids=[local_rank])
    optim = torch.optim.Adam(model.parameters(), lr=5e-4)
    trainer = Trainer(model, optim, loader, sampler, accum_grad=4, device=device)
    for epoch in range(10):
        trainer.train_epoch(epoch)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
