import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_datasets():
    train = TensorDataset(torch.randn(5000, 40), torch.randint(0, 3, (5000,)))
    test = TensorDataset(torch.randn(1001, 40), torch.randint(0, 3, (1001,)))
    return train, test


def make_loader(ds, batch_size, train):
    sampler = DistributedSampler(ds, shuffle=train)
    return DataLoader(ds, batch_size=batch_size, sampler=sampler), sampler


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    stats = torch.zeros(2, device=device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        pred = model(x).argmax(1)
        stats[0] += (pred == y).sum()
        stats[1] += y.numel()
    dist.all_reduce(stats)
    model.train()
    return (stats[0] / stats[1]).item(), int(stats[1].item())


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    train_ds, test_ds = make_datasets()
    train_loader, train_sampler = make_loader(train_ds, 64, train=True)
    test_loader, _ = make_loader(test_ds, 128, train=False)

    model = DDP(nn.Sequential(nn.Linear(40, 64), nn.ReLU(), nn.Linear(64, 3)).to(device),
                device_ids=[local_rank])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(5):
        train_sampler.set_epoch(epoch)
        for x, y in train_loader:
            loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
        acc, n = evaluate(model, test_loader, device)
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: test acc {acc:.4f} over {n} samples")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
