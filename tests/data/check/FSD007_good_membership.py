# The guard is membership of the group that owns the parameter: every rank holding a shard of the DTensor
# passes it, so the all-gather inside full_tensor() meets all its ranks.
import torch.distributed as dist


def _unshard(grad):
    return grad.full_tensor() if hasattr(grad, "full_tensor") else grad


def sync_embedding_grads(weight, embd_group):
    if dist.get_world_size(embd_group) > 1 and dist.get_rank() in dist.get_process_group_ranks(embd_group):
        grad = _unshard(weight.grad)
        dist.all_reduce(grad, group=embd_group)
