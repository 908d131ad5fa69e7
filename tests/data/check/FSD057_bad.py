"""A DDP loop that skips the step on this rank's own NaN loss: the other ranks wait in the backward's all-reduce."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(net, loader):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        if torch.isnan(loss):
            continue  # <- FSD057
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()
