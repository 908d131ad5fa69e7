import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def main():
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    t = torch.ones(1)
    if rank == 0:
        torch.save({"w": t}, "ckpt.pt")  # saving a full state dict on rank 0: no collective inside
    dist.barrier()
    if rank == 0:
        dist.send(t, dst=1)  # point-to-point is meant to differ per rank
    else:
        dist.recv(t, src=0)
    if rank == 0:
        dist.broadcast(t, src=0)
    else:
        dist.broadcast(t, src=0)
    if world_size > 1:
        dist.all_reduce(t)
    if rank is not None:
        dist.barrier()


def check_inputs(path):
    if dist.get_rank() == 0 and not os.path.exists(path):
        raise FileNotFoundError(path)  # an error path: the job fails anyway
    dist.barrier()


def skip_when_alone(t):
    if not dist.is_initialized():
        return
    dist.all_reduce(t)


def sync():
    dist.barrier()


def both_sides(t):
    if dist.get_rank() == 0:
        torch.save(t, "t.pt")
        sync()
    else:
        dist.barrier()


def first_process_prepares(args):
    if args.local_rank not in [-1, 0]:
        dist.barrier()  # the other ranks wait here ...
    data = torch.randn(4)
    if args.local_rank == 0:
        dist.barrier()  # ... until the first one has prepared the data
    return data


def distributed_only(args, t):
    if args.local_rank != -1:  # "running distributed": every rank takes it
        dist.all_reduce(t)
    if args.local_rank >= 0:
        dist.barrier()


def lora(config, lora_rank, t):
    if config.lora.rank > 0:  # a matrix rank, the same on every process
        dist.all_reduce(t)
    if lora_rank == 8:
        dist.barrier()
