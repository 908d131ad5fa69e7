"""The same with the answer made the same on every rank: a barrier after rank 0's write, a shared path."""

import os

import torch
import torch.distributed as dist


def exchange(stats, path):
    if dist.get_rank() == 0:
        torch.save(stats, path)
    dist.barrier()
    if os.path.isfile(path):
        dist.broadcast(stats, src=0)


def resume(model, output_dir):
    if os.path.exists(os.path.join(output_dir, "latest")):
        dist.barrier()
    else:
        dist.barrier()


def log_once(path):
    if os.path.exists("/tmp/marker"):
        print("marker there", path)
