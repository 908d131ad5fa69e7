"""Metrics in an evaluation helper: a number handed to all_reduce, a summed loss called the mean, AVG divided again."""

import numpy as np
import torch
import torch.distributed as dist


def evaluate(model, loader, device):
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            total += torch.nn.functional.mse_loss(model(x.to(device)), y.to(device), reduction="sum").item()
            count += len(x)
    dist.all_reduce(total)  # <- FSD064
    scores = np.array([total, count])
    dist.broadcast(scores, src=0)  # <- FSD064
    return total / count


def log_step(loss, step, writer):
    mean_loss = loss.detach()
    dist.all_reduce(mean_loss)  # <- FSD065
    writer.add_scalar("train/loss", mean_loss.item(), step)


def global_mean(value):
    t = value.detach().clone()
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    t /= dist.get_world_size()  # <- FSD066
    return t
