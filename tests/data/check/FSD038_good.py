"""The same decision on a value every rank holds: all_reduce instead of reduce, or the reduced value broadcast."""

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def train(model, loader, optimizer, target=0.1):
    for epoch in range(10):
        total = torch.zeros(1)
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.detach()
        dist.all_reduce(total)
        if total.item() / dist.get_world_size() < target:
            dcp.save({"model": model.state_dict()}, checkpoint_id=f"ckpt/{epoch}")
            break


def report(loss):
    dist.reduce(loss, dst=0)
    dist.broadcast(loss, src=0)
    if loss.item() > 10:
        dist.barrier()
    if dist.get_rank() == 0 and loss.item() < 1:
        print("converged")  # only rank 0 decides, and only to print
