"""The ranks read by a helper that returns them as a tuple, and a helper returning the global rank: the global one
used as the device index."""

import os

import torch
import torch.distributed as dist


def ranks_from_env():
    global_rank = int(os.environ["RANK"])
    node_rank = int(os.environ["LOCAL_RANK"])
    return global_rank, node_rank, int(os.environ["WORLD_SIZE"])


def my_rank():
    return dist.get_rank()


class Runner:
    def setup(self):
        dist.init_process_group("nccl")
        rank, local_rank, world_size = ranks_from_env()
        torch.cuda.set_device(rank)  # <- FSD042
        self.model = torch.nn.Linear(8, 8).to(my_rank())  # <- FSD042
        return world_size


if __name__ == "__main__":
    Runner().setup()
