import argparse
import os
import shutil
import torch
import torch.nn as nn
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="resnet50")
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("--ckpt-dir", default="/shared/nfs/exp1")
    return p.parse_args()


def save_checkpoint(state, is_best, ckpt_dir, filename="checkpoint.pth.tar"):
    path = os.path.join(ckpt_dir, filename)
    torch.save(state, path)
    if is_best:
        shutil.copyfile(path, os.path.join(ckpt_dir, "model_best.pth.tar"))


def main():
    args = parse()
    args.local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(args.local_rank)
    dist.init_process_group(backend="nccl", init_method="env://")
    model = torchvision.models.__dict__[args.arch]().cuda()
    model = DDP(model, device_ids=[args.local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    best_prec1 = 0.0

    for epoch in range(args.epochs):
        model.train()
        for _ in range(500):
            images = torch.randn(64, 3, 224, 224, device="cuda")
            target = torch.randint(0, 1000, (64,), device="cuda")
            with torch.autocast("cuda", dtype=torch.float16):
                loss = nn.functional.cross_entropy(model(images), target)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        prec1 = 100.0 - loss.item()
        if args.local_rank == 0:
            is_best = prec1 > best_prec1
            best_prec1 = max(prec1, best_prec1)
            save_checkpoint({
                "epoch": epoch + 1,
                "arch": args.arch,
                "state_dict": model.module.state_dict(),
                "best_prec1": best_prec1,
                "optimizer": optimizer.state_dict(),
            }, is_best, args.ckpt_dir)


if __name__ == "__main__":
    main()
