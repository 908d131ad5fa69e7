"""A checkpoint helper (its path a parameter with a default, or passed by the caller) called under
`args.local_rank == 0`: the first process of every node writes the same file on a shared filesystem."""

import argparse
import os
import shutil

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint(state, is_best, filename="checkpoint.pth.tar"):
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, "model_best.pth.tar")


def write_weights(model, path):
    torch.save(model.state_dict(), path)


def main():
    args = argparse.ArgumentParser().parse_args()
    args.local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(args.local_rank)
    dist.init_process_group("nccl")
    model = DDP(torch.nn.Linear(8, 8).cuda(), device_ids=[args.local_rank])
    for epoch in range(3):
        if args.local_rank == 0:
            save_checkpoint({"epoch": epoch, "state_dict": model.module.state_dict()}, True)  # <- FSD041
            write_weights(model.module, os.path.join("/shared/ckpt", "last.pt"))  # <- FSD041
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
