"""AVG alone, or SUM and one division."""

import torch.distributed as dist


def mean_loss(loss):
    reduced = loss.detach().clone()
    dist.all_reduce(reduced, op=dist.ReduceOp.AVG)
    return reduced.item()


def mean_loss_sum(loss):
    reduced = loss.detach().clone()
    dist.all_reduce(reduced, op=dist.ReduceOp.SUM)
    reduced = reduced / dist.get_world_size()
    return reduced.item()
