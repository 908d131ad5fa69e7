import torch.distributed as dist


def groups():
    rank = dist.get_rank()
    if rank in (0, 1):
        pair = dist.new_group([0, 1])  # <- FSD009
        return pair
