import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard


def is_main_process():
    return dist.get_rank() == 0


def save(t):
    torch.save(t, "t.pt")
    dist.barrier()


def main():
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    t = torch.ones(1)
    if rank == 0:
        dist.barrier()  # <- FSD003
    if dist.get_rank() == 0:
        print("hello")
    else:
        dist.all_reduce(t)  # <- FSD003
    if local_rank == 0 and t.sum() > 0:
        dist.broadcast(t, src=0)  # <- FSD003
    if is_main_process():
        save(t)  # <- FSD003
    master_process = rank == 0
    if master_process:
        dist.all_gather_object([None, None], 1)  # <- FSD003


def log_then_sync(t):
    if dist.get_rank() != 0:
        return
    print(t)
    dist.barrier()  # <- FSD003


def loop(batches, rank):
    for t in batches:
        if rank > 0:
            continue
        dist.all_reduce(t)  # <- FSD003


def nested(rank, t, failed_rank=1):
    if rank == failed_rank:
        return
    if rank == 0:
        dist.all_reduce(t)  # <- FSD003
    else:
        dist.all_reduce(t)  # <- FSD003


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "-1"))


def zero_first(local_rank):
    if local_rank not in [-1, 0]:
        dist.barrier()
    yield
    if local_rank == 0:
        dist.barrier()


def build_loader(path, rank=-1, verbose=False):
    for _ in zero_first(rank):
        print(path)


def loaders(path):
    if dist.get_rank() == 0:
        build_loader(path, rank=LOCAL_RANK)  # <- FSD003
        build_loader(path, LOCAL_RANK, verbose=True)  # <- FSD003
        build_loader(path, rank=-1)  # the rank -1 reaches no barrier
        build_loader(path)  # nor does the default
