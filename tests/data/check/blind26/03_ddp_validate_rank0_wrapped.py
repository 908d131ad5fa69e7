import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def build_encoder():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
    )


class Trainer:
    def __init__(self, local_rank):
        self.local_rank = local_rank
        self.encoder = DDP(build_encoder().cuda(local_rank), device_ids=[local_rank])
        self.opt = torch.optim.SGD(self.encoder.parameters(), lr=0.1, momentum=0.9)
        self.crit = nn.CrossEntropyLoss()
        train_ds = TensorDataset(torch.randn(1024, 3, 32, 32), torch.randint(0, 10, (1024,)))
        self.sampler = DistributedSampler(train_ds)
        self.train_loader = DataLoader(train_ds, batch_size=32, sampler=self.sampler)
        val_ds = TensorDataset(torch.randn(256, 3, 32, 32), torch.randint(0, 10, (256,)))
        self.val_loader = DataLoader(val_ds, batch_size=64)

    def train_epoch(self, epoch):
        self.encoder.train()
        self.sampler.set_epoch(epoch)
        for x, y in self.train_loader:
            x, y = x.cuda(self.local_rank), y.cuda(self.local_rank)
            loss = self.crit(self.encoder(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()

    @torch.no_grad()
    def validation(self):
        self.encoder.eval()
        correct = 0
        for x, y in self.val_loader:
            x, y = x.cuda(self.local_rank), y.cuda(self.local_rank)
            out = self.encoder(x)
            correct += (out.argmax(1) == y).sum().item()
        return correct / len(self.val_loader.dataset)

    def fit(self, epochs):
        for epoch in range(epochs):
            self.train_epoch(epoch)
            if dist.get_rank() == 0:
                acc = self.validation()
                print(f"epoch {epoch} acc {acc:.3f}")
                torch.save(self.encoder.module.state_dict(), "encoder.pt")
            dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("nccl")
    lr = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(lr)
    Trainer(lr).fit(10)
    dist.destroy_process_group()
