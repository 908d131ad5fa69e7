"""FSD073 near-misses: the global rank from the environment, a Trainer that reads SLURM_PROCID, and a world of the
node's own GPUs (one machine: the local rank is the rank)."""

import os

import torch
import torch.distributed as dist


def setup(backend, world_size):
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend, rank=int(os.environ["RANK"]), world_size=world_size)
    return local_rank


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.local_rank = int(os.environ.get("SLURM_LOCALID", 0))
        self.rank = int(os.environ.get("SLURM_PROCID", 0))

    def init_distributed(self):
        dist.init_process_group(
            backend="nccl",
            init_method=f"tcp://{self.cfg.master}:29500",
            world_size=int(os.environ["SLURM_NTASKS"]),
            rank=self.rank,
        )


def single_machine(local_rank):
    dist.init_process_group("gloo", rank=local_rank, world_size=torch.cuda.device_count())


def main():
    setup("nccl", int(os.environ["WORLD_SIZE"]))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
