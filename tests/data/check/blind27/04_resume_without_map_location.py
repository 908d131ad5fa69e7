import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="resnet50")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("--resume", default="")
    return p.parse_args()


def build(args, gpu):
    model = torchvision.models.__dict__[args.arch]()
    model.cuda(gpu)
    model = DDP(model, device_ids=[gpu])
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=1e-4)
    return model, optimizer


def maybe_resume(args, model, optimizer):
    start_epoch = 0
    if args.resume and os.path.isfile(args.resume):
        checkpoint = torch.load(args.resume)
        start_epoch = checkpoint["epoch"]
        model.load_state_dict(checkpoint["state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        print(f"=> resumed from '{args.resume}' (epoch {start_epoch})")
    return start_epoch


def save(state, rank, path="checkpoint.pth.tar"):
    if rank == 0:
        torch.save(state, path)


def train_epoch(model, optimizer, gpu, steps=100):
    model.train()
    crit = nn.CrossEntropyLoss().cuda(gpu)
    for _ in range(steps):
        images = torch.randn(32, 3, 224, 224, device=gpu)
        target = torch.randint(0, 1000, (32,), device=gpu)
        loss = crit(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    args = parse_args()
    dist.init_process_group("nccl")
    gpu = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(gpu)
    model, optimizer = build(args, gpu)
    start_epoch = maybe_resume(args, model, optimizer)
    for epoch in range(start_epoch, args.epochs):
        train_epoch(model, optimizer, gpu)
        save({"epoch": epoch + 1, "state_dict": model.state_dict(),
              "optimizer": optimizer.state_dict()}, dist.get_rank())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
