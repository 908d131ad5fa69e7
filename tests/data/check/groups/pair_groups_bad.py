"""Pairwise parameter averaging that builds only this rank's pair group: every process passes its own list to
new_group (the pair holding it), so the calls do not match across the ranks."""

import torch.distributed as dist


def pair_group():
    rank = dist.get_rank()
    partner = rank + 1 if rank % 2 == 0 else rank - 1
    return dist.new_group(sorted([rank, partner]))  # <- FSD009


def block_group(world, size):
    me = dist.get_rank()
    first = 0
    while first + size <= me:
        first += size
    members = list(range(first, min(first + size, world)))
    return dist.new_group(ranks=members)  # <- FSD009


def average(model):
    group = pair_group()
    for p in model.parameters():
        dist.all_reduce(p.data, group=group)
        p.data.div_(2)
