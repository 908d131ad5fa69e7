"""The loss reduced as a tensor, and the number taken after the reduce."""

import torch.distributed as dist


def log_loss(loss, step):
    value = loss.detach().clone()
    dist.all_reduce(value)
    print(f"step {step}: loss {value.item() / dist.get_world_size():.4f}")
