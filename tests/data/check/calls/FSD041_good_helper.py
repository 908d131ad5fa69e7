"""The same helpers called under the global rank 0, or under the local rank 0 with a path that names the node
(or sits on node-local /tmp), or a helper that guards its own save."""

import argparse
import os
import shutil
import socket

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint(state, is_best, filename="checkpoint.pth.tar"):
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, "model_best.pth.tar")


def write_weights(model, path):
    torch.save(model.state_dict(), path)


def save_on_main(model, path):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), path)


def main():
    args = argparse.ArgumentParser().parse_args()
    args.local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(args.local_rank)
    dist.init_process_group("nccl")
    model = DDP(torch.nn.Linear(8, 8).cuda(), device_ids=[args.local_rank])
    for epoch in range(3):
        if dist.get_rank() == 0:
            save_checkpoint({"epoch": epoch, "state_dict": model.module.state_dict()}, True)
        if args.local_rank == 0:
            write_weights(model.module, f"/shared/ckpt/{socket.gethostname()}-last.pt")
            write_weights(model.module, "/tmp/cache/last.pt")
            save_on_main(model.module, "/shared/ckpt/last.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
