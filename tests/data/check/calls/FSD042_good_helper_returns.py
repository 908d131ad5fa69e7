"""The same helpers, the device indexed by the node's rank: the tuple's local element, a helper returning
LOCAL_RANK, and a helper whose returns disagree (the file cannot tell)."""

import os

import torch
import torch.distributed as dist


def ranks_from_env():
    global_rank = int(os.environ["RANK"])
    node_rank = int(os.environ["LOCAL_RANK"])
    return global_rank, node_rank, int(os.environ["WORLD_SIZE"])


def device_index():
    return int(os.environ["LOCAL_RANK"])


def either(use_global):
    if use_global:
        return dist.get_rank()
    return int(os.environ["LOCAL_RANK"])


class Runner:
    def setup(self, flag):
        dist.init_process_group("nccl")
        rank, local_rank, world_size = ranks_from_env()
        torch.cuda.set_device(local_rank)
        self.model = torch.nn.Linear(8, 8).to(device_index())
        self.other = torch.nn.Linear(8, 8).cuda(either(flag))
        *_, last = ranks_from_env()
        return rank, last


if __name__ == "__main__":
    Runner().setup(False)
