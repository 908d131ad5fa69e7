"""FSD073 through a helper and in a Trainer class: the rank on the node handed to init_process_group as the job's."""

import os

import torch
import torch.distributed as dist


def setup(backend, world_size):
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend, rank=local_rank, world_size=world_size)  # <- FSD073
    return local_rank


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.local_rank = int(os.environ.get("SLURM_LOCALID", 0))

    def init_distributed(self):
        dist.init_process_group(
            backend="nccl",
            init_method=f"tcp://{self.cfg.master}:29500",
            world_size=int(os.environ["SLURM_NTASKS"]),
            rank=self.local_rank,  # <- FSD073
        )


def main():
    setup("nccl", int(os.environ["WORLD_SIZE"]))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
