"""Rank 0 evaluates the module inside the DDP wrapper, passed as an argument (``evaluate(model.module, ...)``, by
keyword too, and ``model_without_ddp = model.module`` as DeiT / DINO / MAE keep it), while every rank runs the same
``evaluate`` on the wrapper elsewhere; the forward sits one helper further down (``predict(model, x)``)."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def is_main_process():
    return dist.get_rank() == 0


def predict(model, x):
    return model(x).argmax(-1)


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = sum((predict(model, x) == y).sum() for x, y in loader)
    model.train()
    return correct


def main(args, net, loader, val_loader):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(net.cuda(), device_ids=[local_rank])
    model_without_ddp = model.module
    optimizer = torch.optim.AdamW(model_without_ddp.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print("every rank:", evaluate(model, val_loader))
        if is_main_process():
            print(evaluate(model.module, val_loader))
            print(evaluate(loader=val_loader, model=model.module))
            print(evaluate(model_without_ddp, val_loader))
    dist.destroy_process_group()
