"""mp.spawn pins the job to one node: the global rank is the local one there."""

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(index, world_size):
    dist.init_process_group("nccl", rank=index, world_size=world_size)
    rank = dist.get_rank()
    torch.cuda.set_device(rank)


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)


def torch_spawn(sizes):
    return lambda fn: fn


@torch_spawn([2])
def harness_test():
    torch.cuda.set_device(torch.distributed.get_rank())  # a spawning test harness: one node
