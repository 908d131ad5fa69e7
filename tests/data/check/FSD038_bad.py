"""A stop decision taken on a value only rank 0 holds: dist.reduce(..., dst=0) leaves the sum on rank 0 alone."""

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
        dist.reduce(total, dst=0)
        if total.item() / dist.get_world_size() < target:  # <- FSD038
            dcp.save({"model": model.state_dict()}, checkpoint_id=f"ckpt/{epoch}")
            break


def train_received_other(model, loader, optimizer, stopper, rank):
    stop = False
    for epoch in range(10):
        for x, y in loader:
            model(x).sum().backward()
            optimizer.step()
        stop = stopper(epoch)
        objs = [epoch]
        dist.broadcast_object_list(objs, 0)  # what it broadcasts is not `stop`
        if rank != 0:
            stop = objs[0] > 5
        if stop:  # <- FSD038
            break
