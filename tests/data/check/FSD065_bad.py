"""The summed loss printed as the average."""

import torch.distributed as dist


def report(loss, step):
    reduced = loss.detach().clone()
    dist.all_reduce(reduced)  # <- FSD065
    if dist.get_rank() == 0:
        print(f"step {step}: avg loss {reduced.item():.4f}")
