"""A SLURM launch that takes the device from SLURM_PROCID (global), through a trainer class attribute."""

import os

import torch
import torch.distributed as dist


class Trainer:
    def __init__(self):
        self.rank = int(os.environ["SLURM_PROCID"])
        dist.init_process_group("nccl", rank=self.rank, world_size=int(os.environ["SLURM_NTASKS"]))

    def setup(self, model):
        torch.cuda.set_device(self.rank)  # <- FSD042
        return model.cuda(self.rank)  # <- FSD042
