"""The device indexed by LOCAL_RANK (or the global rank modulo the GPUs of a node); mp.spawn's rank on one node."""

import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device(f"cuda:{local_rank}")
    rank = dist.get_rank()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    return device, rank


def worker(rank, world_size):
    torch.cuda.set_device(rank)  # mp.spawn: one node, the spawned index is the local rank


def estimate(pg):
    rank = dist.get_rank(pg)  # the rank in a group, not the job's global rank
    return torch.device(f"cuda:{rank}")
