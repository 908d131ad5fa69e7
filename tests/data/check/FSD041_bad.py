"""A torchrun script that saves on the local main process (pytorch/pytorch and forum reports: on two nodes with a
shared filesystem both nodes' local rank 0 write checkpoint.pt at once, leaving a truncated file)."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    model = DDP(nn.Linear(8, 8).cuda(), device_ids=[local_rank])
    ckpt_dir = "/shared/checkpoints"
    for epoch in range(3):
        model(torch.randn(4, 8).cuda()).sum().backward()
        if local_rank == 0:
            torch.save(model.module.state_dict(), os.path.join(ckpt_dir, f"epoch{epoch}.pt"))  # <- FSD041
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
