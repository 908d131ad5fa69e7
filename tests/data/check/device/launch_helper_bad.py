"""A launcher with an init helper (init_process_group + barrier) called before the rank's GPU is bound; the Trainer
method that sets the device comes too late too."""

import os

import torch
import torch.distributed as dist


def init_distributed():
    dist.init_process_group(backend="nccl")
    dist.barrier()  # wait until every rank has joined


class Trainer:
    def __init__(self):
        self.local_rank = int(os.environ["LOCAL_RANK"])

    def setup(self):
        init_distributed()  # <- FSD051
        torch.cuda.set_device(self.local_rank)
        self.model = torch.nn.Linear(4, 4).cuda()


def main():
    try:
        Trainer().setup()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
