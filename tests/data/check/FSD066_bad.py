"""Averaged by the reduce op and then divided by the world size again."""

import torch.distributed as dist


def mean_loss(loss):
    reduced = loss.detach().clone()
    dist.all_reduce(reduced, op=dist.ReduceOp.AVG)
    reduced = reduced / dist.get_world_size()  # <- FSD066
    return reduced.item()
