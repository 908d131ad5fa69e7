# Correct patterns of public checkpointing code that an earlier version of FSD003 flagged:
# a collective on an explicit subgroup after an exit decided by a rank in another dimension, a collective
# that every path reaches once (in the exiting branch, and after the if), and one under the complement of
# the non-rank part of an exit condition.
import torch
import torch.distributed as dist


class Saver:
    def __init__(self, dp_group, pp_group):
        self.dp_group, self.pp_group = dp_group, pp_group
        self.dp_rank = dist.get_rank(self.dp_group)

    def save(self, shard, path):
        if self.dp_rank != 0:
            return
        torch.save(shard, path)
        dist.barrier(self.pp_group)
        names = [None] * dist.get_world_size(self.pp_group)
        dist.all_gather_object(names, path, self.pp_group)


def save_on_controller(state, path):
    controlling = dist.get_rank() == 0
    if controlling:
        torch.save(state, path)
    else:
        dist.barrier()
        return
    dist.barrier()


def run_on_some(test_ranks, work):
    rank = dist.get_rank()
    if rank not in test_ranks:
        dist.barrier()
        return
    work()
    dist.barrier()


def evaluate(model, distributed_eval, is_rank0):
    if not distributed_eval and not is_rank0:
        return
    signal = torch.zeros(1)
    if distributed_eval:
        dist.broadcast(signal, src=0)
    return model(signal)
