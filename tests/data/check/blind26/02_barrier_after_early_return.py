import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class VizCallback:
    """Renders a few predictions at the end of every epoch."""

    def __init__(self, out_dir, every=1):
        self.out_dir = out_dir
        self.every = every

    def on_epoch_end(self, epoch, model, sample):
        if dist.get_rank() != 0:
            return
        if epoch % self.every == 0:
            with torch.no_grad():
                pred = model.module(sample)
            os.makedirs(self.out_dir, exist_ok=True)
            torch.save(pred.cpu(), os.path.join(self.out_dir, f"viz_{epoch}.pt"))
        dist.barrier()


def make_loader(batch_size):
    ds = TensorDataset(torch.randn(2048, 32), torch.randn(2048, 1))
    sampler = DistributedSampler(ds, shuffle=True)
    return DataLoader(ds, batch_size=batch_size, sampler=sampler), sampler


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)

    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).cuda()
    model = DDP(model, device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader, sampler = make_loader(64)
    cb = VizCallback("viz")
    sample = torch.randn(8, 32, device="cuda")

    for epoch in range(5):
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        cb.on_epoch_end(epoch, model, sample)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
