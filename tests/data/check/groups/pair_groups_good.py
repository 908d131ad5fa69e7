"""The same pair and block groups built right: every process creates every group, in the same order, and keeps the
one that holds it (the loop's ranks do not depend on this process's rank)."""

import torch.distributed as dist


def pair_group(world):
    rank = dist.get_rank()
    mine = None
    for first in range(0, world, 2):
        group = dist.new_group([first, first + 1])
        if rank in (first, first + 1):
            mine = group
    return mine


def block_group(world, size):
    me = dist.get_rank()
    mine = None
    for first in range(0, world, size):
        members = list(range(first, min(first + size, world)))
        group = dist.new_group(ranks=members)
        if me in members:
            mine = group
    return mine


def everyone(world):
    return dist.new_group(list(range(world)))


def solo_and_all():
    rank, world = dist.get_rank(), dist.get_world_size()
    last = dist.new_group(ranks=[world - 1])
    return last if rank == world - 1 else None
