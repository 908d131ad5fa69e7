"""The launcher, right: the helper binds the GPU before its barrier, and the Trainer calls it first."""

import os

import torch
import torch.distributed as dist


def init_distributed(local_rank):
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    dist.barrier()


class Trainer:
    def __init__(self):
        self.local_rank = int(os.environ["LOCAL_RANK"])

    def setup(self):
        init_distributed(self.local_rank)
        self.model = torch.nn.Linear(4, 4).cuda()


def main():
    try:
        Trainer().setup()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
