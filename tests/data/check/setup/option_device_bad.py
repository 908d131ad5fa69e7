"""FSD074 through a command-line option: a torchrun script whose --device defaults to "cuda:0" and that takes the
device from it (a Trainer keeping the parsed arguments, a parse helper). torchrun gives every rank the same
arguments, so all of them select GPU 0 (NCCL: "Duplicate GPU detected")."""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--epochs", type=int, default=3)
    return p.parse_args()


class Trainer:
    def __init__(self, args, model):
        self.args = args
        self.model = DDP(model.to(self.args.device))  # <- FSD074


def main():
    args = parse()
    dist.init_process_group("nccl")
    torch.cuda.set_device(args.device)  # <- FSD074
    print("local rank", os.environ["LOCAL_RANK"])
    Trainer(args, torch.nn.Linear(8, 8))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
