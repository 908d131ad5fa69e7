"""FSD074, the option shapes that are right: the --device option only for a one-process run, the distributed run
taking its device from LOCAL_RANK, and the option overwritten from the local rank before use."""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda:0")
    return p.parse_args()


def main():
    args = parse()
    if "LOCAL_RANK" in os.environ:
        dist.init_process_group("nccl")
        args.device = f"cuda:{int(os.environ['LOCAL_RANK'])}"
        torch.cuda.set_device(args.device)
    model = torch.nn.Linear(8, 8).to(args.device)
    if dist.is_initialized():
        model = DDP(model, device_ids=[torch.cuda.current_device()])
        dist.destroy_process_group()
    return model


if __name__ == "__main__":
    main()
