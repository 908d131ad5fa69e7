import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class HParams:
    seed = 1234
    batch_size = 16
    epochs = 1000
    lr = 2e-4
    port = "8001"


class TextAudioDataset(Dataset):
    def __init__(self, n_items=12_000, n_mels=80, frames=400):
        self.n_items, self.n_mels, self.frames = n_items, n_mels, frames

    def __len__(self):
        return self.n_items

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(idx)
        spec = torch.randn(self.n_mels, self.frames, generator=g)
        return spec, spec.roll(1, dims=1)


class Generator(nn.Module):
    def __init__(self, n_mels=80, hidden=192):
        super().__init__()
        self.pre = nn.Conv1d(n_mels, hidden, 5, padding=2)
        self.body = nn.Sequential(*[nn.Conv1d(hidden, hidden, 5, padding=2) for _ in range(4)])
        self.post = nn.Conv1d(hidden, n_mels, 1)

    def forward(self, x):
        return self.post(torch.relu(self.body(self.pre(x))))


def run(rank, n_gpus, hps):
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", hps.port)
    dist.init_process_group("nccl", rank=rank, world_size=n_gpus)
    torch.manual_seed(hps.seed)
    torch.cuda.set_device(rank)

    train_dataset = TextAudioDataset()
    train_loader = DataLoader(train_dataset, num_workers=8, shuffle=True, pin_memory=True,
                              batch_size=hps.batch_size, drop_last=True)
    net_g = DDP(Generator().cuda(rank), device_ids=[rank])
    optim_g = torch.optim.AdamW(net_g.parameters(), hps.lr, betas=(0.8, 0.99))

    for epoch in range(1, hps.epochs + 1):
        for batch_idx, (spec, target) in enumerate(train_loader):
            spec, target = spec.cuda(rank, non_blocking=True), target.cuda(rank, non_blocking=True)
            loss = nn.functional.l1_loss(net_g(spec), target)
            optim_g.zero_grad()
            loss.backward()
            optim_g.step()
        if rank == 0:
            print(f"epoch {epoch}: {len(train_loader)} steps, loss {loss.item():.4f}")
            torch.save(net_g.module.state_dict(), f"G_{epoch}.pth")
    dist.destroy_process_group()


def main():
    n_gpus = torch.cuda.device_count()
    mp.spawn(run, nprocs=n_gpus, args=(n_gpus, HParams()))


if __name__ == "__main__":
    main()
