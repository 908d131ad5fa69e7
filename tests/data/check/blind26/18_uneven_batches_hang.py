import glob
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class ShardFileDataset(Dataset):
    """Each rank reads its own list of shard files."""

    def __init__(self, files):
        self.samples = []
        for f in files:
            self.samples.extend(torch.load(f))

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        x, y = self.samples[i]
        return x, y


def rank_files(pattern, rank, world):
    files = sorted(glob.glob(pattern))
    return files[rank::world]


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)

    ds = ShardFileDataset(rank_files("/data/shards/*.pt", rank, world))
    loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=4)
    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1)).cuda(), device_ids=[local_rank])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(10):
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} done, last loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
