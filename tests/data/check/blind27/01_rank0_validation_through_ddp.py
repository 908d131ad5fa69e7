import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class ParticleNet(nn.Module):
    def __init__(self, width=128):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, width), nn.BatchNorm1d(width), nn.ReLU())
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        return self.head(self.encoder(x))


def make_loader(n, distributed):
    ds = TensorDataset(torch.randn(n, 16), torch.randint(0, 4, (n,)))
    sampler = DistributedSampler(ds) if distributed else None
    return DataLoader(ds, batch_size=64, sampler=sampler, shuffle=sampler is None)


def train_one_epoch(model, loader, optimizer, device):
    model.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


@torch.no_grad()
def validate(model, loader, device):
    model.eval()
    correct, total = 0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        pred = model(x).argmax(-1)
        correct += (pred == y).sum().item()
        total += y.numel()
    return correct / max(total, 1)


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)

    model = DDP(ParticleNet().to(device), device_ids=[local_rank])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_loader = make_loader(8192, distributed=True)
    val_loader = make_loader(1024, distributed=False)

    for epoch in range(10):
        train_loader.sampler.set_epoch(epoch)
        train_one_epoch(model, train_loader, optimizer, device)
        if rank == 0:
            acc = validate(model, val_loader, device)
            print(f"epoch {epoch} val acc {acc:.3f}")
            torch.save(model.module.state_dict(), "particlenet.pt")
        dist.barrier()

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
