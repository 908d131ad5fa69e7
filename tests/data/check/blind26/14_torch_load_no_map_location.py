import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def build_backbone():
    return nn.Sequential(
        nn.Conv2d(3, 64, 7, stride=2, padding=3), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 1000),
    )


def restore(model, path, local_rank):
    if not path or not os.path.exists(path):
        return 0
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["model"])
    return checkpoint.get("epoch", 0)


def worker(local_rank, args):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("nccl", rank=local_rank, world_size=args.num_gpus)
    torch.cuda.set_device(local_rank)

    model = build_backbone().cuda(local_rank)
    start_epoch = restore(model, args.resume, local_rank)
    model = DDP(model, device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    for epoch in range(start_epoch, args.epochs):
        for _ in range(20):
            x = torch.randn(32, 3, 112, 112, device=local_rank)
            y = torch.randint(0, 1000, (32,), device=local_rank)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if local_rank == 0:
            torch.save({"model": model.module.state_dict(), "epoch": epoch + 1}, "last.pth")
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--num-gpus", type=int, default=torch.cuda.device_count())
    p.add_argument("--resume", default="last.pth")
    p.add_argument("--epochs", type=int, default=90)
    args = p.parse_args()
    mp.spawn(worker, nprocs=args.num_gpus, args=(args,))
