"""The same loop with the skip flag all-reduced first: every rank skips the same steps."""

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
        skip = torch.isnan(loss).float()
        dist.all_reduce(skip, op=dist.ReduceOp.MAX)
        if skip.item():
            continue
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()
