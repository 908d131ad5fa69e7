"""Gradients averaged by hand in a helper given the FSDP1 model (FSDP already reduced them)."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def average_gradients(model):
    world = dist.get_world_size()
    for name, param in model.named_parameters():
        if param.grad is not None:
            dist.all_reduce(param.grad.data)  # <- FSD067
            param.grad.data /= world


def train(net, loader):
    model = FSDP(net)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for x in loader:
        model(x).sum().backward()
        average_gradients(model)
        opt.step()
        opt.zero_grad()
