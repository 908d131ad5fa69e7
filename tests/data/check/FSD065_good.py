"""The summed loss divided by the world size before it is printed as the average; a summed count printed as a total."""

import torch.distributed as dist


def report(loss, correct, step):
    reduced = loss.detach().clone()
    dist.all_reduce(reduced)
    reduced /= dist.get_world_size()
    dist.all_reduce(correct)
    if dist.get_rank() == 0:
        print(f"step {step}: avg loss {reduced.item():.4f}, correct {correct.item()}")
