"""The decision is taken on a value rank 0 has broadcast to every rank (yolov5's train.py, early stopping):
``broadcast_list = [stop if RANK == 0 else None]``, ``dist.broadcast_object_list(broadcast_list, 0)``, then
``if RANK != 0: stop = broadcast_list[0]``: the other ranks take rank 0's ``stop``, which rank 0 already holds;
and a flag tensor filled on rank 0 and broadcast before the test."""

import os

import torch
import torch.distributed as dist

RANK = int(os.getenv("RANK", -1))


def train(model, loader, optimizer, stopper, epochs):
    stop = False
    for epoch in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if RANK in {-1, 0}:
            stop = stopper(epoch=epoch, fitness=loss.item())
        if RANK != -1:  # if DDP training
            broadcast_list = [stop if RANK == 0 else None]
            dist.broadcast_object_list(broadcast_list, 0)  # broadcast 'stop' to all ranks
            if RANK != 0:
                stop = broadcast_list[0]
        if stop:
            break  # must break all DDP ranks


def train_flag(model, loader, optimizer, patience):
    for epoch in range(100):
        for x, y in loader:
            model(x).sum().backward()
            optimizer.step()
        flag = torch.zeros(1)
        if dist.get_rank() == 0:
            flag = torch.ones(1) if epoch > patience else torch.zeros(1)
        dist.broadcast(flag, 0)
        if flag.item():
            break
