import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.03)
    return p.parse_args()


def build_loaders(batch_size):
    labeled = TensorDataset(torch.randn(4000, 128), torch.randint(0, 10, (4000,)))
    sampler = DistributedSampler(labeled, shuffle=True, drop_last=True)
    loader = DataLoader(labeled, batch_size=batch_size, sampler=sampler,
                        num_workers=2, pin_memory=True, drop_last=True)
    return loader, sampler


def build_model():
    return nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))


def train_one_epoch(model, loader, opt, device):
    model.train()
    total = 0.0
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.item()
    return total / max(len(loader), 1)


def main():
    args = get_args()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)

    model = DDP(build_model().to(device), device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    loader, sampler = build_loaders(args.batch_size)

    for epoch in range(args.epochs):
        avg = train_one_epoch(model, loader, opt, device)
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: loss {avg:.4f}")

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
