"""llm.c-style script: a reference forward on the master process before ``model = DDP(model)`` (the bare module,
no buffer broadcast), and open_clip's evaluate, which unwraps the DDP module before its rank-0 forward."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, data, args):
    if args.distributed and hasattr(model, "module"):
        model = model.module
    model.eval()
    with torch.no_grad():
        for images, texts in data:
            print(model(images, texts))


def train_one_epoch(model, data, optimizer, args):
    for images, texts in data:
        model(images, texts).sum().backward()
        optimizer.step()
    if dist.get_rank() == 0:
        evaluate(model, data, args)


if __name__ == "__main__":
    dist.init_process_group("nccl")
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    master_process = dist.get_rank() == 0
    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)).cuda()
    model = torch.compile(model)
    if master_process:
        x = torch.randn(4, 8).cuda()
        loss = model(x).sum()  # the bare module: DDP wraps it below
        loss.backward()
    model = DDP(model, device_ids=[ddp_local_rank])
    optimizer = torch.optim.AdamW(model.parameters())
    train_one_epoch(model, [(torch.randn(4, 8).cuda(), None)], optimizer, None)
    dist.destroy_process_group()
